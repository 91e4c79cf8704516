import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { type AppendRequest, EventStore, type RecordedEvent } from "../../infra/EventStore.ts"
import { layerMemory } from "../../infra/MemoryEventStore.ts"
import { layerPgEventStore } from "../../infra/PgEventStore.ts"
import { eventLogMigrations, runMigrations } from "../../infra/PgMigrations.ts"
import { Projections } from "../../infra/Projection.ts"
import { freshDatabaseLayer, postgresAvailable } from "../support/Database.ts"

let counter = 0
const event = (type = "Thing", data: Record<string, number | string> = {}) => ({
  eventId: `evt_${process.pid}_${++counter}_${Math.random().toString(36).slice(2)}`,
  type,
  schemaVersion: 1,
  data
})

const append1 = (streamId: string, expectedVersion: number, n = 1): AppendRequest => ({
  streamId,
  streamType: "test",
  expectedVersion,
  events: Array.from({ length: n }, (_, i) => event("Thing", { i }))
})

const NoProjections = Layer.succeed(Projections, [])

const MemoryStore = layerMemory.pipe(Layer.provide(NoProjections))

const PgStore = Layer.effect(
  EventStore,
  Effect.gen(function*() {
    yield* runMigrations(eventLogMigrations)
    return yield* EventStore
  })
).pipe(Layer.provide(layerPgEventStore), Layer.provide(NoProjections), Layer.provideMerge(freshDatabaseLayer()))

const suite = (name: string, storeLayer: Layer.Layer<EventStore, unknown>) =>
  layer(storeLayer, { timeout: 60_000, excludeTestServices: true })(name, (it) => {
    it.effect("appends, reads a stream and rejects a stale expected version", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const first = yield* store.append([append1("s-basic", 0, 2)])
        assert.deepStrictEqual(first.map((e) => e.version), [1, 2])
        const stale = yield* Effect.flip(store.append([append1("s-basic", 1)]))
        assert.strictEqual(stale._tag, "ConcurrencyConflict")
        const again = yield* Effect.flip(store.append([append1("s-basic", 0)]))
        assert.strictEqual(again._tag, "ConcurrencyConflict")
        yield* store.append([append1("s-basic", 2)])
        const read = yield* store.readStream("s-basic")
        assert.deepStrictEqual(read.map((e) => e.version), [1, 2, 3])
        assert.deepStrictEqual(read.map((e) => e.data), [{ i: 0 }, { i: 1 }, { i: 0 }])
      }))

    it.effect("an append naming two streams is atomic", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        yield* store.append([append1("s-atomic-a", 0)])
        const failed = yield* Effect.flip(store.append([append1("s-atomic-b", 0), append1("s-atomic-a", 0)]))
        assert.strictEqual(failed._tag, "ConcurrencyConflict")
        assert.strictEqual((yield* store.readStream("s-atomic-b")).length, 0)
      }))

    it.effect("concurrent appenders on one stream: exactly one wins per version", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const stream = "s-race"
        for (let version = 0; version < 5; version++) {
          const results = yield* Effect.forEach(
            Array.from({ length: 10 }, () => append1(stream, version)),
            (request) => Effect.result(store.append([request])),
            { concurrency: "unbounded" }
          )
          const wins = results.filter((r) => r._tag === "Success").length
          assert.strictEqual(wins, 1, `version ${version}`)
        }
        assert.strictEqual((yield* store.readStream(stream)).length, 5)
      }))

    it.effect("8 writers on many streams while a reader follows: every event once, stream order kept", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const start = yield* store.head
        const writers = 8
        const perWriter = 60
        const total = writers * perWriter
        const reader = yield* store.follow(start).pipe(
          Stream.filter((e) => e.streamId.startsWith("s-feed-")),
          Stream.take(total),
          Stream.runCollect,
          Effect.forkChild
        )
        yield* Effect.forEach(
          Array.from({ length: writers }, (_, w) => w),
          (w) =>
            Effect.forEach(
              Array.from({ length: perWriter }, (_, i) => i),
              (i) => {
                const stream = `s-feed-${w}-${i % 6}`
                return store.append([append1(stream, Math.floor(i / 6))])
              },
              { discard: true }
            ),
          { concurrency: "unbounded", discard: true }
        )
        const seen: ReadonlyArray<RecordedEvent> = yield* Fiber.join(reader)
        assert.strictEqual(seen.length, total)
        assert.strictEqual(new Set(seen.map((e) => e.eventId)).size, total)
        const lastVersion = new Map<string, number>()
        for (const e of seen) {
          assert.strictEqual(e.version, (lastVersion.get(e.streamId) ?? 0) + 1, `order of ${e.streamId}`)
          lastVersion.set(e.streamId, e.version)
        }
      }))

    it.effect("readAll pages through the feed from a checkpoint", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const head = yield* store.head
        yield* store.append([append1("s-page", 0, 7)])
        const page1 = yield* store.readAll(head, 4)
        const page2 = yield* store.readAll(page1[page1.length - 1]!.position, 4)
        assert.deepStrictEqual([...page1, ...page2].filter((e) => e.streamId === "s-page").map((e) => e.version), [1, 2, 3, 4, 5, 6, 7])
      }))
  })

suite("EventStore (memory)", MemoryStore)

describe.skipIf(!postgresAvailable)("EventStore (Postgres)", () => {
  suite("EventStore (Postgres) shared", PgStore)

  layer(PgStore, { timeout: 60_000, excludeTestServices: true })("late commits", (it) => {
    it.effect("a transaction held open while later ones commit: the reader waits, then gets all", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const sql = yield* SqlClient.SqlClient
        // Start right after our own setup event: `head` may lag behind while other databases on
        // the same server hold transactions open (the feed waits for every older transaction).
        const [setup] = yield* store.append([append1("s-late-setup", 0)])
        const start = setup!.position
        const holding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The slow writer inserts its event first, so its transaction id is the oldest.
        const slow = yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`INSERT INTO streams (stream_id, stream_type, version) VALUES ('s-late-slow', 'test', 1)`
            yield* sql`INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data)
                       VALUES ('s-late-slow', 1, ${`evt_slow_${Date.now()}`}, 'Thing', 1, '{}'::jsonb)`
            yield* Deferred.succeed(holding, undefined)
            yield* Deferred.await(release)
          })
        ).pipe(Effect.forkChild)
        yield* Deferred.await(holding)
        for (let i = 0; i < 5; i++) yield* store.append([append1(`s-late-fast-${i}`, 0)])
        const early = yield* store.readAll(start, 100)
        assert.strictEqual(early.length, 0, "nothing after the open transaction is visible yet")
        const reader = yield* store.follow(start).pipe(Stream.take(6), Stream.runCollect, Effect.forkChild)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(slow)
        const all = yield* Fiber.join(reader)
        assert.deepStrictEqual(all.map((e) => e.streamId), ["s-late-slow", ...[0, 1, 2, 3, 4].map((i) => `s-late-fast-${i}`)])
      }))
  })
})
