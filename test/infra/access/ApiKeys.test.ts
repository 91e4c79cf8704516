import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { ApiKeys, layerMemory } from "../../../infra/access/ApiKeys.ts"
import { configLayer } from "../../support/Config.ts"

const keys = layerMemory.pipe(Layer.provide(configLayer({ SERVICE_API_KEYS: "boot_key_0000000001=proj_a/user_1" })))

describe("api keys (memory)", () => {
  it.effect("verify bootstrap and created keys, list them by project, and refuse a revoked one", () =>
    Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      expect(yield* apiKeys.verify("boot_key_0000000001")).toStrictEqual({ keyId: "key_bootstrap_1", projectId: "proj_a", userId: "user_1" })
      expect(yield* apiKeys.verify("boot_key_0000000002")).toBeUndefined()
      const { key, record } = yield* apiKeys.create({ projectId: "proj_b" })
      expect(yield* apiKeys.verify(Redacted.value(key))).toStrictEqual(record)
      yield* apiKeys.create({ projectId: "proj_c", userId: "user_2" })
      expect((yield* apiKeys.list("proj_b")).map((r) => r.keyId)).toStrictEqual([record.keyId])
      expect(yield* apiKeys.list()).toHaveLength(2)
      expect(yield* apiKeys.revoke(record.keyId)).toBe(true)
      expect(yield* apiKeys.revoke(record.keyId)).toBe(false)
      expect(yield* apiKeys.verify(Redacted.value(key))).toBeUndefined()
      expect((yield* apiKeys.list("proj_b"))[0]?.revokedAt).toBeTypeOf("string")
    }).pipe(Effect.provide(keys)))
})
