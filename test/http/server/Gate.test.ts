/**
 * The edge's key check (http/server/Gate.ts) on its own, with a store that counts its lookups: a
 * flood of made-up keys from one address is answered 401, key by key (interface.md,
 * Authentication 1), while the store never sees more than the address's allowance of lookups at
 * once; a valid key from the same address is not refused for its neighbours' sake.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { describe, expect, it } from "vitest"
import type { ApiKeysShape, Principal } from "../../../infra/access/ApiKeys.ts"
import { makeGate, type Verdict } from "../../../http/server/Gate.ts"

const POLICY = { perMinute: 1, burst: 5 }

/** A store whose every lookup takes 2 ms; `good_*` keys are valid, the rest unknown. */
const countingKeys = () => {
  const seen = { lookups: 0, inFlight: 0, mostAtOnce: 0 }
  const keys: ApiKeysShape = {
    verify: (presented) =>
      Effect.gen(function*() {
        seen.lookups++
        seen.inFlight++
        seen.mostAtOnce = Math.max(seen.mostAtOnce, seen.inFlight)
        yield* Effect.sleep("2 millis")
        seen.inFlight--
        return presented.startsWith("good_") ? { keyId: "key_1", projectId: "proj_1", userId: undefined } satisfies Principal : undefined
      }),
    known: () => undefined,
    costsLookup: () => true,
    create: () => Effect.die("unused"),
    list: () => Effect.die("unused"),
    revoke: () => Effect.die("unused")
  }
  return { keys, seen }
}

const requestWith = (key: string) =>
  HttpServerRequest.fromWeb(new Request("http://localhost/v1/me", { headers: { authorization: `Bearer ${key}` } }))

const statusOf = (verdict: Verdict) => (verdict._tag === "Allowed" ? 200 : verdict.failure.status)

describe("the edge's key check under a flood of made-up keys from one address", () => {
  it("answers every made-up key 401, with no more lookups at once than the address's allowance, and still lets a valid key through", async () => {
    const { keys, seen } = countingKeys()
    const gate = makeGate(keys, POLICY)
    const flood = Array.from({ length: 60 }, (_, i) => gate.check(requestWith(`made_up_${i}`)))
    const [verdicts, valid] = await Effect.runPromise(Effect.all([
      Effect.all(flood, { concurrency: "unbounded" }),
      // Sent in the middle of the flood, never seen before: it must be looked up too.
      Effect.delay(gate.check(requestWith("good_key_1")), "10 millis")
    ], { concurrency: "unbounded" }))
    expect(new Set(verdicts.map(statusOf))).toEqual(new Set([401]))
    expect(statusOf(valid)).toBe(200)
    expect(seen.lookups).toBe(61)
    // The allowance's lookups at once, then one at a time for the address.
    expect(seen.mostAtOnce).toBeLessThanOrEqual(POLICY.burst + 1)
  })

  it("a valid key gives its token back: after many, the address still has its whole allowance", async () => {
    const { keys, seen } = countingKeys()
    const gate = makeGate(keys, POLICY)
    for (let i = 0; i < 20; i++) expect(statusOf(await Effect.runPromise(gate.check(requestWith(`good_${i}`))))).toBe(200)
    const madeUp = Array.from({ length: POLICY.burst }, (_, i) => gate.check(requestWith(`made_up_${i}`)))
    expect(new Set((await Effect.runPromise(Effect.all(madeUp, { concurrency: "unbounded" }))).map(statusOf))).toEqual(new Set([401]))
    // None of the five waited in the address's lane.
    expect(seen.mostAtOnce).toBe(POLICY.burst)
  })
})
