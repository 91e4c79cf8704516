/**
 * Actor runtime throughput: how fast entities start and messages flow in one process, in memory
 * and as a single runner on Postgres (volatile messages, the counter entity of the tests).
 *
 *   node bench/scenarios/actors.ts   (ACTORS_BENCH_N=5000, ACTORS_BENCH_CONCURRENCY=64 by default)
 *   node --expose-gc bench/scenarios/actors.ts   (adds the heap cost of a resident entity)
 *
 * Postgres rows are skipped when the database of SERVICE_TEST_DATABASE_URL is not reachable.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { type EntityId, Sharding, ShardId } from "effect/cluster"
import { fileURLToPath } from "node:url"
import { ActorRuntime, SHARDS_PER_GROUP } from "./ClusterRuntime.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../test/support/Database.ts"
import { freePort } from "../../test/support/Ports.ts"
import { Counter, CounterLive } from "./CounterEntity.ts"

const N = Number(process.env.ACTORS_BENCH_N ?? "5000")
const CONCURRENCY = Number(process.env.ACTORS_BENCH_CONCURRENCY ?? "64")
const SEQUENTIAL = 2000

interface Row {
  readonly runtime: string
  readonly startMs: number
  readonly newEntitiesPerSec: number
  readonly messagesPerSec: number
  readonly sequentialUs: { readonly p50: number; readonly p99: number }
  readonly newEntityUs: { readonly p50: number; readonly p99: number }
  readonly heapPerEntityBytes: number | undefined
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

const gc = (): boolean => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect === undefined) return false
  collect()
  return true
}

/** Runs `f` `n` times one after the other; the sorted latencies in microseconds. */
const timeEach = <E, R>(n: number, f: (i: number) => Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const latencies: Array<number> = []
    for (let i = 0; i < n; i++) {
      const start = performance.now()
      yield* f(i)
      latencies.push((performance.now() - start) * 1000)
    }
    return latencies.toSorted((a, b) => a - b)
  })

const measure = (runtime: string) =>
  Effect.gen(function*() {
    const started = performance.now()
    const clientFor = yield* Counter.client
    yield* clientFor("warmup").Increment({ amount: 1 })
    const startMs = performance.now() - started
    // Let the JIT settle before timing (the first thousand messages run several times slower).
    const warm = Array.from({ length: 2000 }, (_, i) => `warm-${i}`)
    for (let round = 0; round < 2; round++) {
      yield* Effect.forEach(warm, (id) => clientFor(id).Increment({ amount: 1 }), { concurrency: CONCURRENCY, discard: true })
    }
    const ids = Array.from({ length: N }, (_, i) => `bench-${i}`)

    const heapBefore = gc() ? process.memoryUsage().heapUsed : undefined
    let t = performance.now()
    yield* Effect.forEach(ids, (id) => clientFor(id).Increment({ amount: 1 }), { concurrency: CONCURRENCY, discard: true })
    const newEntitiesPerSec = N / ((performance.now() - t) / 1000)
    const heapPerEntityBytes = heapBefore !== undefined && gc()
      ? (process.memoryUsage().heapUsed - heapBefore) / N
      : undefined

    t = performance.now()
    yield* Effect.forEach(ids, (id) => clientFor(id).Increment({ amount: 1 }), { concurrency: CONCURRENCY, discard: true })
    const messagesPerSec = N / ((performance.now() - t) / 1000)

    const one = clientFor("sequential")
    const latencies = yield* timeEach(SEQUENTIAL, () => one.Increment({ amount: 1 }))
    const fresh = yield* timeEach(SEQUENTIAL, (i) => clientFor(`fresh-${i}`).Increment({ amount: 1 }))
    return {
      runtime,
      startMs,
      newEntitiesPerSec,
      messagesPerSec,
      sequentialUs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
      newEntityUs: { p50: percentile(fresh, 0.5), p99: percentile(fresh, 0.99) },
      heapPerEntityBytes
    } satisfies Row
  })

const runWith = (name: string, runtime: Layer.Layer<Sharding.Sharding, unknown>): Promise<Row> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const started = performance.now()
    const context = yield* Layer.build(CounterLive.pipe(Layer.provideMerge(runtime)))
    const buildMs = performance.now() - started
    const row = yield* Effect.provideContext(measure(name), context)
    return { ...row, startMs: buildMs + row.startMs }
  })) as Effect.Effect<Row>)

const withDatabase = async <A>(use: (url: string) => Promise<A>): Promise<A> => {
  const url = await createTestDatabase("bench_actors")
  try {
    return await use(url)
  } finally {
    await dropTestDatabase(url)
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")

/**
 * Two socket runners (in this process, on loopback TCP) sharing one database: messages from one
 * runner to entities the other owns, so every message crosses the runner protocol.
 */
const crossRunner = (url: string) =>
  Effect.gen(function*() {
    const pg = PgClient.layer({ url: Redacted.make(url), maxConnections: 6 })
    const runner = (port: number) =>
      ManagedRuntime.make(CounterLive.pipe(
        Layer.provideMerge(ActorRuntime.layerRunner({ host: "127.0.0.1", port })),
        Layer.provide(pg)
      ))
    const [portA, portB] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
    const a = yield* Effect.acquireRelease(Effect.succeed(runner(portA)), (rt) => Effect.promise(() => rt.dispose()))
    const b = yield* Effect.acquireRelease(Effect.succeed(runner(portB)), (rt) => Effect.promise(() => rt.dispose()))
    const held = (rt: typeof a) =>
      Effect.promise(() =>
        rt.runPromise(Effect.map(Sharding.Sharding, (sharding) => {
          let count = 0
          for (let id = 1; id <= SHARDS_PER_GROUP; id++) if (sharding.hasShardId(ShardId.make("default", id))) count++
          return count
        }))
      )
    // Wait until the shards are split, so no entity moves while timing.
    for (let attempt = 0; attempt < 200; attempt++) {
      const [heldA, heldB] = [yield* held(a), yield* held(b)]
      if (heldA > 0 && heldB > 0 && heldA + heldB === SHARDS_PER_GROUP) break
      yield* Effect.sleep("250 millis")
    }
    return yield* Effect.promise(() =>
      a.runPromise(Effect.gen(function*() {
        const sharding = yield* Sharding.Sharding
        const clientFor = yield* Counter.client
        const remote = Array.from({ length: 2 * N }, (_, i) => `remote-${i}`).filter((id) =>
          !sharding.hasShardId(sharding.getShardId(id as EntityId.EntityId, "default"))
        )
        const send = Effect.forEach(remote, (id) => clientFor(id).Increment({ amount: 1 }), {
          concurrency: CONCURRENCY,
          discard: true
        })
        yield* send
        const start = performance.now()
        yield* send
        const messagesPerSec = remote.length / ((performance.now() - start) / 1000)
        const one = clientFor(remote[0] ?? "remote-0")
        const latencies = yield* timeEach(SEQUENTIAL, () => one.Increment({ amount: 1 }))
        return { messagesPerSec, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) }
      }))
    )
  }).pipe(Effect.scoped)

const print = (rows: ReadonlyArray<Row>) => {
  const table = rows.map((row) => ({
    runtime: row.runtime,
    "start (ms)": fmt(row.startMs),
    "new entities/s": fmt(row.newEntitiesPerSec),
    "msgs/s (resident)": fmt(row.messagesPerSec),
    "1 entity p50 (µs)": fmt(row.sequentialUs.p50),
    "1 entity p99 (µs)": fmt(row.sequentialUs.p99),
    "new entity p50 (µs)": fmt(row.newEntityUs.p50),
    "new entity p99 (µs)": fmt(row.newEntityUs.p99),
    "heap/entity (B)": row.heapPerEntityBytes === undefined ? "run with --expose-gc" : fmt(row.heapPerEntityBytes)
  }))
  process.stdout.write(
    `actors: ${N} distinct entities, ${CONCURRENCY} concurrent senders; ${SEQUENTIAL} sequential messages to one entity and to new entities\n`
  )
  console.table(table)
}

export const run = async (): Promise<void> => {
  const rows: Array<Row> = []
  rows.push(await runWith("memory (TestRunner wiring)", ActorRuntime.layerMemory))
  rows.push(
    await runWith(
      "memory, no serialization simulation",
      ActorRuntime.layerMemoryWith({ simulateRemoteSerialization: false })
    )
  )
  if (postgresAvailable) {
    rows.push(
      await withDatabase((url) =>
        runWith(
          "Postgres single runner",
          ActorRuntime.layerSingle.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 8 })))
        )
      )
    )
  }
  print(rows)
  if (postgresAvailable) {
    const cross = await withDatabase((url) => Effect.runPromise(crossRunner(url)))
    process.stdout.write("actors across two socket runners (one process, loopback TCP), to entities of the other runner\n")
    console.table([{
      "msgs/s (resident)": fmt(cross.messagesPerSec),
      "1 entity p50 (µs)": fmt(cross.p50),
      "1 entity p99 (µs)": fmt(cross.p99)
    }])
  }
}

export const name = "actors"
export const scenario = { name, run }
export default scenario

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await run()
}
