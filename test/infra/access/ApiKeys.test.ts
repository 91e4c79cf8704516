import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { accessMigrations, ApiKeys, layerMemory, layerPg } from "../../../infra/access/ApiKeys.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { configLayer } from "../../support/Config.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

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

describe.skipIf(!postgresAvailable)("api keys (Postgres)", () => {
  it("a flood of unknown keys never evicts a valid key from the cache", async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(layerPg.pipe(
        Layer.provideMerge(Layer.effectDiscard(runMigrations(accessMigrations)).pipe(Layer.provideMerge(freshDatabaseLayer()))),
        Layer.provide(configLayer({}))
      ))
      const apiKeys = Context.get(context, ApiKeys)
      const sql = Context.get(context, SqlClient.SqlClient)
      const { key, record } = yield* apiKeys.create({ projectId: "proj_flood" })
      expect(yield* apiKeys.verify(Redacted.value(key))).toStrictEqual(record)
      // The key's row goes away: from now on only the cache can answer for it.
      yield* sql`DELETE FROM api_keys`
      // Past 10,000 entries the old cache was cleared whole, valid keys included.
      yield* Effect.forEach(Array.from({ length: 10_050 }, (_, i) => `flood_${i}`), (presented) => apiKeys.verify(presented), {
        concurrency: 64,
        discard: true
      })
      expect(apiKeys.known(Redacted.value(key))).toStrictEqual(record)
      expect(yield* apiKeys.verify(Redacted.value(key))).toStrictEqual(record)
    })))
  }, 60_000)
})
