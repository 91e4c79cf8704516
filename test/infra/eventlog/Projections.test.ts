import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { EventStore, type EventStoreShape, type RecordedEvent, START } from "../../../infra/eventlog/EventStore.ts"
import { layerMemory, MemoryTablesService } from "../../../infra/eventlog/MemoryEventStore.ts"
import { layerPgEventStore } from "../../../infra/eventlog/PgEventStore.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { decodeRow, ident, physicalName } from "../../../infra/eventlog/PgViewStore.ts"
import { type Projection, projectAll, Projections, type Row, type TableSpec } from "../../../infra/eventlog/Projection.ts"
import { ensureProjectionTables, projectionStatus, replayProjection, type ReplayProgress } from "../../../infra/eventlog/ProjectionAdmin.ts"
import { MemoryTables } from "../../../infra/eventlog/ViewStore.ts"
import { migrations as allMigrations } from "../../../src/App.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"
import { ACCOUNTS, accountsProjection, ENTRIES, nextEvent } from "../support/AccountsProjection.ts"

const inline = accountsProjection("inline")
const asyncProjection = accountsProjection("async", "test_async")

/** A migrated fresh database with the given projections' tables and the Postgres event store. */
const pgLayer = (projections: ReadonlyArray<Projection>) => {
  const ProjectionsTest = Layer.succeed(Projections, projections)
  const Setup = Layer.effectDiscard(Effect.andThen(runMigrations(allMigrations), ensureProjectionTables))
  return layerPgEventStore.pipe(
    Layer.provideMerge(Setup),
    Layer.provideMerge(ProjectionsTest),
    Layer.provideMerge(freshDatabaseLayer({ maxConnections: 12 }))
  )
}

/** Every column present (absent means null), so rows from either store compare exactly. */
const normalize = (spec: TableSpec, row: Row): Row =>
  Object.fromEntries(Object.keys(spec.columns).map((column) => [column, row[column] ?? null]))

const pgDump = (spec: TableSpec) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql.unsafe<Record<string, unknown>>(
      `SELECT * FROM ${ident(physicalName(spec.name))} ORDER BY ${spec.primaryKey.map(ident).join(", ")}`
    )
    return rows.map((raw) => normalize(spec, decodeRow(spec, raw)))
  })

/**
 * The whole log once `expected` events are readable: the feed stops below the oldest running
 * transaction of the server, which another test's database may hold back for a moment.
 */
const readEverything = (store: EventStoreShape, expected: number) =>
  Effect.gen(function*() {
    const all: Array<RecordedEvent> = []
    let cursor = START
    for (let idle = 0; idle < 100; idle++) {
      const page = yield* store.readAll(cursor, 1000)
      if (page.length > 0) {
        all.push(...page)
        cursor = page[page.length - 1]!.position
        idle = 0
      } else if (all.length >= expected) return all
      else yield* Effect.sleep("100 millis")
    }
    return all
  })

/** The reference: the projection applied to the whole log by the memory tables. */
const reference = (projection: Projection, events: ReadonlyArray<RecordedEvent>) => {
  const tables = new MemoryTables(new Map(projection.tables.map((t) => [t.name, t.primaryKey])))
  tables.apply(projectAll(projection, events))
  return tables
}

// Ids whose byte order differs from the order of their JSON encodings, and keys past 9.
const ACCOUNT_IDS = ["acct", "acct 1", "acct!", "acct-10", "acct-9", ...Array.from({ length: 55 }, (_, i) => `a-${i}`)]

// The same projection in three shapes: each adds a column filled from the Opened event.
const shaped = (extra: ReadonlyArray<string>): Projection => ({
  name: "shapes",
  mode: "inline",
  tables: [{ name: "shapes", columns: { id: "text", ...Object.fromEntries(extra.map((c) => [c, "text" as const])) }, nullable: extra, primaryKey: ["id"] }],
  streamTypes: ["account"],
  project: (event) =>
    event.type === "Opened"
      ? [{ op: "upsert", table: "shapes", row: { id: event.streamId, ...Object.fromEntries(extra.map((c) => [c, `${c}:${event.streamId}`])) } }]
      : []
})
const ensure = (projection: Projection) => Effect.provideService(ensureProjectionTables, Projections, [projection])
const columns = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'v_shapes' ORDER BY ordinal_position`)

const WRITERS = 8
const EVENTS = 3_000

describe.skipIf(!postgresAvailable)("projections on Postgres", () => {
  layer(pgLayer([inline]), { timeout: 120_000, excludeTestServices: true })("replay while appending", (it) => {
    it.effect("replays swapped in during thousands of appends equal the live tables, and no append is lost", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const sql = yield* SqlClient.SqlClient
        let appended = 0
        let writersDone = false
        const writing = () => !writersDone
        const writer = (w: number) =>
          Effect.gen(function*() {
            const mine = ACCOUNT_IDS.filter((_, i) => i % WRITERS === w)
            const state = new Map(mine.map((id) => [id, { version: 0, balance: 0 }]))
            for (let n = 0; n < EVENTS / WRITERS; n++) {
              const account = mine[n % mine.length]!
              const current = state.get(account)!
              const { request, balance } = nextEvent(account, current.version, current.balance, n * WRITERS + w)
              yield* store.append([request])
              state.set(account, { version: current.version + 1, balance })
              appended++
            }
          })
        const writers = yield* Effect.forEach(Array.from({ length: WRITERS }, (_, w) => w), writer, {
          concurrency: "unbounded",
          discard: true
        }).pipe(Effect.ensuring(Effect.sync(() => (writersDone = true))), Effect.forkChild)

        const overlaps: Array<{ before: number; after: number; count: number; progress: Array<ReplayProgress> }> = []
        while (writing()) {
          const before = appended
          const progress: Array<ReplayProgress> = []
          const count = yield* replayProjection(inline, (p) => Effect.sync(() => progress.push(p)))
          overlaps.push({ before, after: appended, count, progress })
        }
        yield* Fiber.join(writers)

        assert.isAtLeast(overlaps.length, 2, "several replays ran during the appends")
        assert.isTrue(overlaps.some((o) => o.after > o.before), "appends committed while a replay was running")
        for (const o of overlaps) {
          assert.isAtLeast(o.count, o.before, "a replay sees every event committed before it started")
          assert.deepStrictEqual(o.progress[o.progress.length - 1], { done: o.count, target: o.count })
          for (let i = 1; i < o.progress.length; i++) assert.isAtLeast(o.progress[i]!.done, o.progress[i - 1]!.done)
        }

        const events = yield* readEverything(store, EVENTS)
        assert.strictEqual(events.length, EVENTS, "every append is in the log")
        const expected = reference(inline, events)
        const liveAccounts = yield* pgDump(ACCOUNTS)
        const liveEntries = yield* pgDump(ENTRIES)
        assert.strictEqual(liveAccounts.length, ACCOUNT_IDS.length)
        assert.isAbove(liveEntries.length, 100)
        assert.deepStrictEqual(liveAccounts, expected.dump(ACCOUNTS.name).map((r) => normalize(ACCOUNTS, r)))
        assert.deepStrictEqual(liveEntries, expected.dump(ENTRIES.name).map((r) => normalize(ENTRIES, r)))

        // A replay at rest rebuilds exactly the same tables.
        assert.strictEqual(yield* replayProjection(inline), EVENTS)
        assert.deepStrictEqual(yield* pgDump(ACCOUNTS), liveAccounts)
        assert.deepStrictEqual(yield* pgDump(ENTRIES), liveEntries)

        // Every intermediate table was renamed into place or dropped.
        const tables = yield* sql<{ name: string }>`
          SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'v\\_%' ORDER BY 1`
        assert.deepStrictEqual(tables.map((t) => t.name), [physicalName(ACCOUNTS.name), physicalName(ENTRIES.name)])

        // Declared once, runs on both stores: the memory event store applies the same projection
        // to the same rows when given the same events.
        const memory = yield* Effect.gen(function*() {
          const memoryStore = yield* EventStore
          for (const event of events) {
            yield* memoryStore.append([{
              streamId: event.streamId,
              streamType: event.streamType,
              expectedVersion: event.version - 1,
              events: [{ eventId: event.eventId, type: event.type, schemaVersion: event.schemaVersion, data: event.data }]
            }])
          }
          return yield* MemoryTablesService
        }).pipe(Effect.provide(layerMemory.pipe(Layer.provide(Layer.succeed(Projections, [inline])))))
        assert.deepStrictEqual(memory.dump(ACCOUNTS.name).map((r) => normalize(ACCOUNTS, r)), liveAccounts)
        assert.deepStrictEqual(memory.dump(ENTRIES.name).map((r) => normalize(ENTRIES, r)), liveEntries)
      }))
  })

  layer(pgLayer([inline]), { timeout: 60_000, excludeTestServices: true })("an interrupted replay", (it) => {
    // `projections replay` stopped with Ctrl-C (or a replay at start-up cut short): the tables it
    // was filling go, the live ones stay as they were.
    it.effect("leaves no table of its own behind and the live tables as they were", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const sql = yield* SqlClient.SqlClient
        const state = new Map<string, { version: number; balance: number }>()
        for (let n = 0; n < 2_500; n++) {
          const account = ACCOUNT_IDS[n % ACCOUNT_IDS.length]!
          const current = state.get(account) ?? { version: 0, balance: 0 }
          const { request, balance } = nextEvent(account, current.version, current.balance, n)
          yield* store.append([request])
          state.set(account, { version: current.version + 1, balance })
        }
        const before = yield* pgDump(ACCOUNTS)
        const firstBatch = yield* Deferred.make<void>()
        const replay = yield* Effect.forkChild(replayProjection(inline, (p) => (p.done > 0 ? Deferred.succeed(firstBatch, undefined) : Effect.void)))
        yield* Deferred.await(firstBatch)
        yield* Fiber.interrupt(replay)
        const tables = yield* sql<{ name: string }>`
          SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'v\\_%' ORDER BY 1`
        assert.deepStrictEqual(tables.map((t) => t.name), [physicalName(ACCOUNTS.name), physicalName(ENTRIES.name)])
        assert.deepStrictEqual(yield* pgDump(ACCOUNTS), before)
      }))
  })

  layer(pgLayer([inline, asyncProjection]), { timeout: 60_000, excludeTestServices: true })("status", (it) => {
    it.effect("reports checkpoints and lag: inline never lags, an async projection lags until replayed", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const append = (count: number, offset: number) =>
          Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => {
            const id = `s-${offset + i}`
            return store.append([nextEvent(id, 0, 0, offset + i).request])
          }).pipe(Effect.map((events) => events.flat()))
        const byName = Effect.map(projectionStatus, (rows) => new Map(rows.map((r) => [r.name, r])))
        // Lag counts events below the oldest running transaction of the whole server, so a
        // transaction elsewhere (another test's database) can hold it back for a moment.
        const asyncLag = (expected: number) =>
          Effect.gen(function*() {
            for (let i = 0; i < 100; i++) {
              const lag = (yield* byName).get(asyncProjection.name)?.lag
              if (lag === expected) return lag
              yield* Effect.sleep("100 millis")
            }
            return (yield* byName).get(asyncProjection.name)?.lag
          })

        const empty = yield* byName
        assert.deepStrictEqual([...empty.keys()], [inline.name, asyncProjection.name])
        assert.deepStrictEqual(empty.get(inline.name), { name: inline.name, mode: "inline", checkpoint: "in commit", lag: 0 })
        assert.deepStrictEqual(empty.get(asyncProjection.name), { name: asyncProjection.name, mode: "async", checkpoint: "0:0", lag: 0 })

        const first = yield* append(7, 0)
        assert.strictEqual(yield* asyncLag(7), 7)
        assert.strictEqual((yield* byName).get(inline.name)?.lag, 0)

        assert.strictEqual(yield* replayProjection(asyncProjection), 7)
        const last = first[first.length - 1]!.position
        assert.deepStrictEqual((yield* byName).get(asyncProjection.name), {
          name: asyncProjection.name,
          mode: "async",
          checkpoint: `${last.tx}:${last.seq}`,
          lag: 0
        })
        const rows = yield* pgDump(asyncProjection.tables[0]!)
        assert.deepStrictEqual(rows.map((r) => r.id), ["s-0", "s-1", "s-2", "s-3", "s-4", "s-5", "s-6"])

        yield* append(3, 100)
        assert.strictEqual(yield* asyncLag(3), 3)
      }))

    it.effect("events that commit after the replay's last read are applied before the swap", () =>
      Effect.gen(function*() {
        const store = yield* EventStore
        const sql = yield* SqlClient.SqlClient
        const holding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // An append held open: the feed stops before it, so the replay's reads end there, and
        // the appends that commit after it are visible only once it commits.
        const slow = yield* sql.withTransaction(
          Effect.gen(function*() {
            yield* sql`INSERT INTO streams (stream_id, stream_type, version) VALUES ('late', 'account', 1)`
            yield* sql`INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data)
                       VALUES ('late', 1, ${`evt_late_${Date.now()}`}, 'Opened', 1, '{"owner":"late"}'::jsonb)`
            yield* Deferred.succeed(holding, undefined)
            yield* Deferred.await(release)
          })
        ).pipe(Effect.forkChild)
        yield* Deferred.await(holding)
        for (let i = 0; i < 5; i++) yield* store.append([nextEvent(`after-${i}`, 0, 0, i).request])
        const replay = yield* Effect.forkChild(replayProjection(inline))
        // Wait until the replay has read what it can and queues for the lock on streams.
        while (true) {
          const waiting = yield* sql<{ n: bigint }>`
            SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE streams%'`
          if (Number(waiting[0]?.n ?? 0) > 0) break
          yield* Effect.sleep("20 millis")
        }
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(slow)
        const count = yield* Fiber.join(replay)
        const events = yield* readEverything(store, count)
        assert.strictEqual(count, events.length)
        const expected = reference(inline, events)
        const accounts = yield* pgDump(ACCOUNTS)
        assert.deepStrictEqual(accounts, expected.dump(ACCOUNTS.name).map((r) => normalize(ACCOUNTS, r)))
        assert.includeMembers(accounts.map((r) => r.id), ["late", "after-0", "after-4"])
      }))
  })

  layer(Layer.effectDiscard(runMigrations(allMigrations)).pipe(Layer.provideMerge(freshDatabaseLayer())), {
    timeout: 60_000,
    excludeTestServices: true
  })("start-up", (it) => {
    it.effect("a changed projection gets tables of its new shape, on an empty log and from the log", () =>
      Effect.gen(function*() {
        yield* ensure(shaped([]))
        assert.deepStrictEqual((yield* columns).map((c) => c.name), ["id"])
        yield* ensure(shaped([]))
        // A new shape while the log is still empty.
        yield* ensure(shaped(["a"]))
        assert.deepStrictEqual((yield* columns).map((c) => c.name), ["id", "a"])

        yield* Effect.flatMap(EventStore, (store) =>
          Effect.forEach(["x", "y"], (id) => store.append([nextEvent(id, 0, 0, 0).request]))).pipe(
            Effect.provide(layerPgEventStore.pipe(Layer.provide(Layer.succeed(Projections, [shaped(["a"])]))))
          )
        assert.deepStrictEqual(yield* pgDump(shaped(["a"]).tables[0]!), [{ id: "x", a: "a:x" }, { id: "y", a: "a:y" }])

        // A new shape with events: rebuilt from the log with the new column filled.
        yield* ensure(shaped(["a", "b"]))
        assert.deepStrictEqual((yield* columns).map((c) => c.name), ["id", "a", "b"])
        assert.deepStrictEqual(yield* pgDump(shaped(["a", "b"]).tables[0]!), [{ id: "x", a: "a:x", b: "b:x" }, { id: "y", a: "a:y", b: "b:y" }])
      }))
  })
})
