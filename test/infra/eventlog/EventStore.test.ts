import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { type AppendRequest, EventStore, type RecordedEvent } from "../../../infra/eventlog/EventStore.ts"
import { layerMemory } from "../../../infra/eventlog/MemoryEventStore.ts"
import { layerPgEventStore } from "../../../infra/eventlog/PgEventStore.ts"
import { eventLogMigrations, runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { type Projection, Projections, type TableSpec } from "../../../infra/eventlog/Projection.ts"
import { createTableStatements } from "../../../infra/eventlog/PgViewStore.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

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
        // The feed stops below the oldest running transaction of the whole server, which another
        // test's database may hold back for a moment: an empty page means "not yet".
        const seen: Array<RecordedEvent> = []
        let cursor = head
        for (let i = 0; i < 200 && seen.filter((e) => e.streamId === "s-page").length < 7; i++) {
          const page = yield* store.readAll(cursor, 4)
          assert.isAtMost(page.length, 4)
          if (page.length === 0) yield* Effect.sleep("50 millis")
          else {
            seen.push(...page)
            cursor = page[page.length - 1]!.position
          }
        }
        const mine = seen.filter((e) => e.streamId === "s-page")
        assert.deepStrictEqual(mine.map((e) => e.version), [1, 2, 3, 4, 5, 6, 7])
        // Postgres parses a feed event's JSON when it is first read.
        assert.deepStrictEqual(mine.map((e) => e.data), [0, 1, 2, 3, 4, 5, 6].map((i) => ({ i })))
        assert.deepStrictEqual(mine.map((e) => e.metadata), mine.map(() => ({})))
      }))
  })

suite("EventStore (memory)", MemoryStore)

describe.skipIf(!postgresAvailable)("EventStore (Postgres)", () => {
  suite("EventStore (Postgres) shared", PgStore)

  layer(PgStore, { timeout: 60_000, excludeTestServices: true })("a poisoned append", (it) => {
    it.effect("a value jsonb refuses, or one too deep to serialize, fails only its own append, never its batch neighbours", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        let deep: unknown = "bottom"
        for (let i = 0; i < 20_000; i++) deep = [deep]
        const poisoned = [
          { streamId: "p-nul", streamType: "test", expectedVersion: 0, events: [{ ...event(), data: { a: "x\u0000y" } }] },
          { streamId: "p-surrogate", streamType: "test", expectedVersion: 0, events: [{ ...event(), data: { a: "\ud800" } }] },
          { streamId: "p-deep", streamType: "test", expectedVersion: 0, events: [{ ...event(), data: { a: deep } as never }] }
        ]
        const good = Array.from({ length: 60 }, (_, i) => append1(`p-good-${i}`, 0))
        // Submitted together, so they share commits with the poisoned ones.
        const outcomes = yield* Effect.forEach([...poisoned, ...good], (request) => Effect.exit(store.append([request])), {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual(outcomes.slice(0, 3).map((exit) => exit._tag), ["Failure", "Failure", "Failure"])
        assert.deepStrictEqual(outcomes.slice(3).filter((exit) => exit._tag !== "Success").length, 0)
        for (let i = 0; i < 60; i++) assert.strictEqual((yield* store.readStream(`p-good-${i}`)).length, 1)
        for (const request of poisoned) assert.strictEqual((yield* store.readStream(request.streamId)).length, 0)
      }))
  })

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

// Inline projections on Postgres: a commit is one statement when every view table takes one kind
// of change, a transaction of several otherwise; both must be atomic with the events.
const thingsTable: TableSpec = { name: "things", columns: { id: "text", n: "bigint" }, primaryKey: ["id"] }
const thingsProjection = (readPosition: boolean): Projection => ({
  name: "things",
  mode: "inline",
  tables: [thingsTable],
  streamTypes: ["test"],
  project: (recorded) => {
    if (readPosition && recorded.type === "Peek") return [{ op: "upsert", table: "things", row: { id: "peek", n: Number(recorded.position.seq) } }]
    const data = recorded.data as { readonly id: string; readonly n?: number }
    return recorded.type === "Drop"
      ? [{ op: "delete", table: "things", key: { id: data.id } }]
      : [{ op: "upsert", table: "things", row: { id: data.id, n: data.n ?? 0 } }]
  }
})

const PgStoreWith = (projection: Projection) =>
  Layer.effect(
    EventStore,
    Effect.gen(function*() {
      yield* runMigrations(eventLogMigrations)
      const sql = yield* SqlClient.SqlClient
      for (const statement of createTableStatements(thingsTable)) yield* sql.unsafe(statement)
      return yield* EventStore
    })
  ).pipe(
    Layer.provide(layerPgEventStore),
    Layer.provide(Layer.succeed(Projections, [projection])),
    Layer.provideMerge(freshDatabaseLayer())
  )

const things = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ id: string; n: string }>`SELECT id, n::text FROM v_things ORDER BY id`, (rows) =>
    rows.map((row) => `${row.id}=${row.n}`)))

const put = (streamId: string, expectedVersion: number, id: string, n: number, type = "Put"): AppendRequest => ({
  streamId,
  streamType: "test",
  expectedVersion,
  events: [event(type, { id, n })]
})

describe.skipIf(!postgresAvailable)("EventStore (Postgres) with inline projections", () => {
  layer(PgStoreWith(thingsProjection(false)), { timeout: 60_000, excludeTestServices: true })("commits", (it) => {
    it.effect("events and view rows commit together, in one statement or in several", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        // One kind of change per table: the one-statement commit.
        yield* store.append([put("p-a", 0, "a", 1), put("p-b", 0, "b", 2)])
        assert.deepStrictEqual(yield* things, ["a=1", "b=2"])
        // An upsert and a delete of the same table in one commit: the commit in steps.
        yield* store.append([put("p-a", 1, "a", 5), put("p-b", 1, "b", 0, "Drop")])
        assert.deepStrictEqual(yield* things, ["a=5"])
        assert.deepStrictEqual((yield* store.readStream("p-b")).map((e) => e.type), ["Put", "Drop"])
      }))

    it.effect("a stale expected version rolls back the whole commit, view rows included, on both paths", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        yield* store.append([put("r-a", 0, "ra", 1)])
        const once = yield* Effect.flip(store.append([put("r-new", 0, "rn", 1), put("r-a", 0, "ra", 9)]))
        assert.strictEqual(once._tag, "ConcurrencyConflict")
        const steps = yield* Effect.flip(store.append([put("r-new", 0, "rn", 1, "Drop"), put("r-c", 0, "rc", 3), put("r-a", 0, "ra", 9)]))
        assert.strictEqual(steps._tag, "ConcurrencyConflict")
        assert.deepStrictEqual((yield* things).filter((t) => t.startsWith("r")), ["ra=1"])
        assert.strictEqual((yield* store.readStream("r-new")).length, 0)
        assert.strictEqual((yield* store.readStream("r-c")).length, 0)
        // The streams that did not move commit on their own afterwards.
        yield* store.append([put("r-new", 0, "rn", 4)])
        assert.deepStrictEqual((yield* things).filter((t) => t.startsWith("r")), ["ra=1", "rn=4"])
      }))
  })

  layer(PgStoreWith(thingsProjection(true)), { timeout: 60_000, excludeTestServices: true })("contract", (it) => {
    it.effect("an inline projection that reads an event's position fails the append instead of guessing", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const failed = yield* Effect.flip(Effect.catchDefect(store.append([put("c-a", 0, "x", 1, "Peek")]), (defect) => Effect.fail(defect)))
        assert.match(String(failed), /position or createdAt/)
        assert.strictEqual((yield* store.readStream("c-a")).length, 0)
        // The writer survives the bug: later appends commit.
        yield* store.append([put("c-b", 0, "y", 2)])
        assert.deepStrictEqual(yield* things, ["y=2"])
      }))
  })
})
