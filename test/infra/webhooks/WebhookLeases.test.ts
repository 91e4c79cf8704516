/**
 * Lane leases on Postgres: two processes (here two lease services, each on its own session)
 * never hold one key together, many keys asked for at once are answered each on its own, and a
 * released key passes to the other side.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import * as WebhookLeases from "../../../infra/webhooks/WebhookLeases.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

const leases = Effect.map(Layer.build(WebhookLeases.layerPg), Context.get(WebhookLeases.WebhookLeases))

describe.skipIf(!postgresAvailable)("webhook leases (Postgres)", () => {
  layer(freshDatabaseLayer(), { timeout: 60_000 })("two sessions", (it) => {
    it.effect("grant each key to one side only, however many are asked for together", () =>
      Effect.scoped(Effect.gen(function*() {
        const a = yield* leases
        const b = yield* leases
        const keys = Array.from({ length: 200 }, (_, i) => `whe_${i}`)
        const even = keys.filter((_, i) => i % 2 === 0)
        const odd = keys.filter((_, i) => i % 2 === 1)
        // Concurrent asks are coalesced; every answer still belongs to its own key.
        const [gotA, gotB] = yield* Effect.all([
          Effect.forEach(even, a.tryAcquire, { concurrency: "unbounded" }),
          Effect.forEach(odd, b.tryAcquire, { concurrency: "unbounded" })
        ], { concurrency: "unbounded" })
        assert.isTrue(gotA.every(Boolean) && gotB.every(Boolean))
        const [aOnOdd, bOnEven] = yield* Effect.all([
          Effect.forEach(odd, a.tryAcquire, { concurrency: "unbounded" }),
          Effect.forEach(even, b.tryAcquire, { concurrency: "unbounded" })
        ], { concurrency: "unbounded" })
        assert.isTrue(aOnOdd.every((granted) => !granted))
        assert.isTrue(bOnEven.every((granted) => !granted))
        // Released keys pass to the other side; the rest stay where they are.
        yield* Effect.forEach(even.slice(0, 50), a.release, { concurrency: "unbounded", discard: true })
        const passed = yield* Effect.forEach(even.slice(0, 60), b.tryAcquire, { concurrency: "unbounded" })
        assert.deepStrictEqual(passed, [...Array(50).fill(true), ...Array(10).fill(false)])
      })))
  })
})
