import { assert, describe, layer } from "@effect/vitest"
import { afterAll, beforeAll, expect, test } from "vitest"
import { PgClient } from "@effect/sql-pg"
import { Cause, Effect, Exit, Fiber, Layer, Redacted, Scope } from "effect"
import type { Sharding } from "effect/cluster"
import { NotFound } from "../../../domain/Errors.ts"
import { ActorRuntime, SHARDS_PER_GROUP } from "../../../infra/actors/Actors.ts"
import { createTestDatabase, dropTestDatabase, freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"
import { type ActorProcess, startActorProcess } from "../support/ActorProcess.ts"
import { Counter, CounterLive } from "../support/CounterEntity.ts"

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

    it.effect("typed errors and defects reach the caller; the entity keeps its state", () =>
      Effect.gen(function*() {
        const counter = (yield* Counter.client)("failing")
        yield* counter.Increment({ amount: 5 })
        const failure = yield* Effect.flip(counter.Missing())
        assert.instanceOf(failure, NotFound)
        const crash = yield* Effect.exit(counter.Crash())
        assert.isTrue(Exit.isFailure(crash) && Cause.hasDies(crash.cause))
        assert.strictEqual((yield* counter.Increment({ amount: 1 })).value, 6)
      }))

    it.effect("a payload that its schema refuses is refused locally too", () =>
      Effect.gen(function*() {
        const counter = (yield* Counter.client)("malformed")
        const exit = yield* Effect.exit(counter.Increment({ amount: 1.5 }))
        assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause))
        assert.strictEqual((yield* counter.Get()).value, 0)
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

  test("a second single runner on the same database waits until the first is gone", async () => {
    const url = await createTestDatabase("actors")
    const runtime = ActorRuntime.layerSingle.pipe(
      Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))
    )
    try {
      await Effect.runPromise(Effect.gen(function*() {
        const first = yield* Scope.make()
        yield* Layer.buildWithScope(runtime, first)
        const second = yield* Scope.make()
        const starting = yield* Effect.forkChild(Layer.buildWithScope(runtime, second))
        yield* Effect.sleep("2 seconds")
        assert.isUndefined(starting.pollUnsafe())
        yield* Scope.close(first, Exit.void)
        yield* Fiber.join(starting).pipe(Effect.timeout("15 seconds"))
        yield* Scope.close(second, Exit.void)
      }))
    } finally {
      await dropTestDatabase(url)
    }
  }, 60_000)
})

const waitFor = async <A>(what: string, timeoutMs: number, poll: () => Promise<A | undefined>): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  while (Date.now() < deadline) {
    try {
      const value = await poll()
      if (value !== undefined) return value
    } catch (error) {
      lastError = error
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`timed out waiting for ${what}${lastError === undefined ? "" : `: ${String(lastError)}`}`)
}

describe.skipIf(!postgresAvailable)("actors across two processes on one Postgres", () => {
  let databaseUrl = ""
  const nodes: Array<ActorProcess> = []

  beforeAll(async () => {
    databaseUrl = await createTestDatabase("actors")
  })

  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.kill9()))
    if (databaseUrl !== "") await dropTestDatabase(databaseUrl)
  })

  test("share the shards, give each entity one owner, and take over a killed runner's shards", async () => {
    const a = await startActorProcess(databaseUrl)
    nodes.push(a)
    const b = await startActorProcess(databaseUrl)
    nodes.push(b)

    // Wait until the shards are split between the two runners, so no entity moves mid-test.
    await waitFor("both runners to hold shards", 30_000, async () => {
      const [heldA, heldB] = await Promise.all([a.shards(), b.shards()])
      return heldA > 0 && heldB > 0 && heldA + heldB === SHARDS_PER_GROUP ? true : undefined
    })

    // Every entity gets 20 increments through each process, all at once.
    const ids = range(20).map((i) => `shared-${i}`)
    const replies = await Promise.all(
      ids.map((id) => Promise.all(range(40).map((i) => (i % 2 === 0 ? a : b).increment(id))))
    )
    const owners = new Map<string, number>()
    replies.forEach((forId, index) => {
      const id = ids[index] ?? ""
      expect(forId.map((r) => r.value).toSorted((x, y) => x - y), id).toEqual(range(40).map((i) => i + 1))
      const pids = new Set(forId.map((r) => r.pid))
      expect(pids.size, id).toBe(1)
      owners.set(id, forId[0]?.pid ?? 0)
    })
    expect(new Set(owners.values())).toEqual(new Set([a.pid, b.pid]))

    // Kill b: its entities move to a (their in-memory state starts over; real entities reload
    // from the event log).
    const orphan = ids.find((id) => owners.get(id) === b.pid) ?? ""
    await b.kill9()
    const started = Date.now()
    const after = await waitFor("a to take over b's entity", 60_000, async () => {
      const reply = await a.increment(orphan, { timeoutMs: 5_000 })
      return reply.pid === a.pid ? reply : undefined
    })
    expect(after.pid).toBe(a.pid)
    await waitFor("a to hold every shard", 30_000, async () => ((await a.shards()) === SHARDS_PER_GROUP ? true : undefined))
    process.stdout.write(`takeover after kill -9: ${Date.now() - started} ms\n`)

    // a still answers for its own entities, with their state intact.
    const kept = ids.find((id) => owners.get(id) === a.pid) ?? ""
    expect(await a.increment(kept)).toEqual({ value: 41, pid: a.pid })
  }, 90_000)
})
