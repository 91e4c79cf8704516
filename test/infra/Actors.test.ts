import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { Sharding } from "effect/cluster"
import { ActorRuntime } from "../../infra/Actors.ts"
import { freshDatabaseLayer, postgresAvailable } from "../support/Database.ts"
import { Counter, CounterLive } from "./support/CounterEntity.ts"

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

const elapsed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = performance.now()
    const result = yield* effect
    return [result, performance.now() - start] as const
  })

const suite = (name: string, runtime: Layer.Layer<Sharding.Sharding, unknown>) =>
  layer(CounterLive.pipe(Layer.provideMerge(runtime)), { timeout: 60_000, excludeTestServices: true })(name, (it) => {
    it.effect("messages to one entity are handled one at a time, in the order sent", () =>
      Effect.gen(function*() {
        const counter = (yield* Counter.client)("ordered")
        // Each handler reads, yields, then writes: overlapping handlers would repeat values.
        const replies = yield* Effect.forEach(range(100), () => counter.Increment({ amount: 1 }), {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(replies.map((r) => r.value), range(100).map((i) => i + 1))
        assert.deepStrictEqual(new Set(replies.map((r) => r.pid)), new Set([process.pid]))
        assert.strictEqual((yield* counter.Get()).value, 100)
      }))

    it.effect("a slow message holds back the next one for the same entity", () =>
      Effect.gen(function*() {
        const counter = (yield* Counter.client)("serial")
        const [replies, ms] = yield* elapsed(
          Effect.forEach(range(5), () => counter.Increment({ amount: 1, delayMs: 100 }), { concurrency: "unbounded" })
        )
        assert.deepStrictEqual(replies.map((r) => r.value), [1, 2, 3, 4, 5])
        assert.isAtLeast(ms, 500)
      }))

    it.effect("different entities run concurrently", () =>
      Effect.gen(function*() {
        const clientFor = yield* Counter.client
        const [replies, ms] = yield* elapsed(
          Effect.forEach(range(20), (i) => clientFor(`parallel-${i}`).Increment({ amount: 1, delayMs: 200 }), {
            concurrency: "unbounded"
          })
        )
        assert.deepStrictEqual(replies.map((r) => r.value), range(20).map(() => 1))
        // Sequential would take 4 s.
        assert.isBelow(ms, 1500)
      }))

    it.effect("thousands of distinct entities each get their own state", () =>
      Effect.gen(function*() {
        const clientFor = yield* Counter.client
        const ids = range(2000).map((i) => `many-${i}`)
        yield* Effect.forEach(ids, (id) => clientFor(id).Increment({ amount: 1 }), { concurrency: 200, discard: true })
        const again = yield* Effect.forEach(ids, (id) => clientFor(id).Increment({ amount: 2 }), { concurrency: 200 })
        assert.deepStrictEqual(new Set(again.map((r) => r.value)), new Set([3]))
      }))
  })

suite("actors in memory", ActorRuntime.layerMemory)

describe.skipIf(!postgresAvailable)("actors on Postgres", () => {
  suite("single runner", ActorRuntime.layerSingle.pipe(Layer.provide(freshDatabaseLayer())))
})
