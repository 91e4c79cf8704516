import { assert, describe, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { executionsTable } from "../../../infra/executions/ExecutionsProjection.ts"
import type { EventStoreShape } from "../../../infra/eventlog/EventStore.ts"
import { makePgEventStore } from "../../../infra/eventlog/PgEventStore.ts"
import { makePgPermitStore } from "../../../infra/executions/PgExecutionPermits.ts"
import { type Projection, Projections, type TableSpec } from "../../../infra/eventlog/Projection.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { createTableStatements } from "../../../infra/eventlog/PgViewStore.ts"
import { migrations as allMigrations } from "../../../src/App.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

const Migrated = Layer.effectDiscard(Effect.gen(function*() {
  yield* runMigrations(allMigrations)
  const sql = yield* SqlClient.SqlClient
  for (const statement of createTableStatements(executionsTable)) yield* sql.unsafe(statement)
})).pipe(Layer.provideMerge(freshDatabaseLayer()))

const setStatus = (executionId: string, status: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`
    INSERT INTO v_executions (project_id, execution_id, user_id, tool, status, created_ms, record)
    VALUES ('proj_p', ${executionId}, 'u', 'demo.echo', ${status}, 0, '{}'::jsonb)
    ON CONFLICT (project_id, execution_id) DO UPDATE SET status = excluded.status`)

const key = (executionId: string) => ({ projectId: "proj_p", toolkit: "demo", executionId })

/** One event `type` ("Put" or "Drop") of thing `id` in a new stream. */
const thing = (streamId: string, id: string, type = "Put") => [{
  streamId,
  streamType: "lc_thing",
  expectedVersion: 0,
  events: [{ eventId: `evt_${streamId}`, type, schemaVersion: 1, data: { id } }]
}]

const thingsTable: TableSpec = { name: "lc_things", columns: { id: "text" }, primaryKey: ["id"], indexes: [] }

/** Put upserts, Drop deletes: both in one commit make the commit in several statements. */
const thingsProjection: Projection = {
  name: "lc_things",
  mode: "inline",
  tables: [thingsTable],
  streamTypes: ["lc_thing"],
  project: (event) => {
    const id = (event.data as { id: string }).id
    return [event.type === "Put" ? { op: "upsert", table: "lc_things", row: { id } } : { op: "delete", table: "lc_things", key: { id } }]
  }
}

/**
 * Runs `effect` while the event log's writer is held on a commit whose lane (`toolkit` of proj_p)
 * another transaction has locked, so the appends `effect` makes gather into the next commit.
 */
const whileWriterHeld = <A, E, R>(
  appendWithinCap: NonNullable<EventStoreShape["appendWithinCap"]>,
  toolkit: string,
  effect: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const locked = yield* Deferred.make<void>()
    const holder = yield* Effect.forkScoped(sql.withTransaction(Effect.gen(function*() {
      yield* sql`SELECT lock_permit_lanes(ARRAY['proj_p'], ARRAY[${toolkit}])`
      yield* Deferred.succeed(locked, undefined)
      yield* Effect.sleep("300 millis")
    })))
    yield* Deferred.await(locked)
    const blocked = yield* Effect.forkScoped(appendWithinCap(thing(`held_${toolkit}`, `held_${toolkit}`), { projectId: "proj_p", toolkit, cap: 1 }))
    yield* Effect.sleep("50 millis")
    const result = yield* effect
    yield* Fiber.join(holder)
    yield* Fiber.join(blocked)
    return result
  })

const failures = (exit: Exit.Exit<unknown, { readonly _tag: string }>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.map((r) => r._tag === "Fail" && r.error._tag) : []

describe.skipIf(!postgresAvailable)("execution permits on Postgres", () => {
  layer(Migrated, { timeout: 60_000, excludeTestServices: true })("grants", (it) => {
    it.effect("a permit counts until its execution is terminal in the view, whether or not it is released", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* makePgPermitStore
        const sql = yield* SqlClient.SqlClient
        // Granted with no view row yet (request not committed), then pending, then running.
        assert.isTrue(yield* store.tryInsert(key("exe_a"), 2))
        assert.isTrue(yield* store.tryInsert(key("exe_b"), 2))
        assert.isFalse(yield* store.tryInsert(key("exe_c"), 2))
        yield* setStatus("exe_a", "pending")
        yield* setStatus("exe_b", "running")
        assert.isFalse(yield* store.tryInsert(key("exe_c"), 2))
        // The outcome's commit frees it: the slot still names it, the permit is not held.
        yield* setStatus("exe_a", "succeeded")
        const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE execution_id = 'exe_a'`
        assert.strictEqual(rows[0]?.n, 1)
        assert.isTrue(yield* store.tryInsert(key("exe_c"), 2))
        assert.isFalse(yield* store.tryInsert(key("exe_d"), 2))
        for (const status of ["failed", "cancelled"]) {
          yield* setStatus("exe_b", status)
          assert.isTrue(yield* store.tryInsert(key("exe_d"), 2))
          yield* setStatus("exe_b", "running")
          yield* sql`UPDATE execution_permit_slots SET execution_id = NULL WHERE execution_id = 'exe_d'`
        }
        // Another lane (toolkit) has its own count.
        assert.isTrue(yield* store.tryInsert({ ...key("exe_e"), toolkit: "http" }, 1))
      })))

    it.effect("removal is housekeeping: it returns at once and the slot is cleared in the background", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* makePgPermitStore
        const sql = yield* SqlClient.SqlClient
        assert.isTrue(yield* store.tryInsert({ ...key("exe_r"), toolkit: "slack" }, 1))
        assert.isFalse(yield* store.tryInsert({ ...key("exe_s"), toolkit: "slack" }, 1))
        // Nothing was recorded for exe_r (no view row): only the release frees it.
        yield* store.remove({ ...key("exe_r"), toolkit: "slack" })
        let left = 1
        for (let i = 0; i < 100 && left > 0; i++) {
          yield* Effect.sleep("20 millis")
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE execution_id = 'exe_r'`
          left = rows[0]?.n ?? 0
        }
        assert.strictEqual(left, 0)
        assert.isTrue(yield* store.tryInsert({ ...key("exe_s"), toolkit: "slack" }, 1))
      })))

    it.effect("a holder asking again keeps its permit; a grant never recorded frees its slot after a minute", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* makePgPermitStore
        const sql = yield* SqlClient.SqlClient
        const github = (executionId: string) => ({ ...key(executionId), toolkit: "github" })
        assert.isTrue(yield* store.tryInsert(github("exe_g1"), 2))
        assert.isTrue(yield* store.tryInsert(github("exe_g2"), 2))
        assert.isTrue(yield* store.tryInsert(github("exe_g1"), 2))
        assert.isFalse(yield* store.tryInsert(github("exe_g3"), 2))
        const slots = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE toolkit = 'github'`
        assert.strictEqual(slots[0]?.n, 2)
        // exe_g1's process died before its request was recorded: after a minute its slot is free,
        // while exe_g2 (same age, recorded as running) still holds its own.
        yield* setStatus("exe_g2", "running")
        yield* sql`UPDATE execution_permit_slots SET acquired_at = now() - interval '61 seconds' WHERE toolkit = 'github'`
        assert.isTrue(yield* store.tryInsert(github("exe_g3"), 2))
        assert.isFalse(yield* store.tryInsert(github("exe_g4"), 2))
        // One batch: arrival order decides who gets the last free slot of a lane.
        yield* setStatus("exe_g2", "succeeded")
        const [first, second] = yield* Effect.all([store.tryInsert(github("exe_g5"), 2), store.tryInsert(github("exe_g6"), 2)], {
          concurrency: "unbounded"
        })
        assert.deepStrictEqual([first, second], [true, false])
      })))

    it.effect("a lane gets its slots on its first grant and more when its cap grows; a smaller cap uses the first ones", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* makePgPermitStore
        const sql = yield* SqlClient.SqlClient
        const lane = (executionId: string) => ({ projectId: "proj_cap", toolkit: "slack", executionId })
        const slots = Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE project_id = 'proj_cap'`,
          (rows) => rows[0]?.n
        )
        assert.isTrue(yield* store.tryInsert(lane("exe_c1"), 1))
        assert.strictEqual(yield* slots, 1)
        assert.isFalse(yield* store.tryInsert(lane("exe_c2"), 1))
        assert.isTrue(yield* store.tryInsert(lane("exe_c2"), 3))
        assert.isTrue(yield* store.tryInsert(lane("exe_c3"), 3))
        assert.strictEqual(yield* slots, 3)
        assert.isFalse(yield* store.tryInsert(lane("exe_c4"), 3))
        // Back to a cap of 2: only the first two slots count (both held), none is made or dropped.
        assert.isFalse(yield* store.tryInsert(lane("exe_c5"), 2))
        assert.strictEqual(yield* slots, 3)
      })))

    it.effect("a release waits for the lanes a grant holds instead of deadlocking with it", () =>
      Effect.scoped(Effect.gen(function*() {
        const store = yield* makePgPermitStore
        const sql = yield* SqlClient.SqlClient
        const lane = (toolkit: string, executionId: string) => ({ projectId: "proj_dl", toolkit, executionId })
        assert.isTrue(yield* store.tryInsert(lane("lane_a", "exe_dl_a"), 1))
        assert.isTrue(yield* store.tryInsert(lane("lane_b", "exe_dl_b"), 1))
        const deadlocks = Effect.gen(function*() {
          // A backend reports its statistics within a second.
          yield* Effect.sleep("1500 millis")
          yield* sql`SELECT pg_stat_clear_snapshot()`
          const rows = yield* sql<{ n: number }>`SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()`
          return rows[0]?.n ?? 0
        })
        const before = yield* deadlocks
        // A writer in the middle of a grant: both lanes locked, lane b's slot written, lane a's
        // next. A release of both slots arrives meanwhile; had it locked lane a's row first, the
        // two would wait on each other.
        yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT lock_permit_lanes(ARRAY['proj_dl', 'proj_dl'], ARRAY['lane_a', 'lane_b'])`
          yield* sql`UPDATE execution_permit_slots SET acquired_at = acquired_at WHERE execution_id = 'exe_dl_b'`
          yield* store.remove(lane("lane_a", "exe_dl_a"))
          yield* store.remove(lane("lane_b", "exe_dl_b"))
          yield* Effect.sleep("300 millis")
          yield* sql`UPDATE execution_permit_slots SET acquired_at = acquired_at WHERE execution_id = 'exe_dl_a'`
        }))
        let left = 2
        for (let i = 0; i < 100 && left > 0; i++) {
          yield* Effect.sleep("20 millis")
          const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE execution_id IN ('exe_dl_a', 'exe_dl_b')`
          left = rows[0]?.n ?? 0
        }
        assert.strictEqual(left, 0)
        assert.strictEqual((yield* deadlocks) - before, 0)
      })))

    it.effect("an append within a cap commits while its lane has a free permit; a full lane refuses only its own append", () =>
      Effect.scoped(Effect.gen(function*() {
        const permits = yield* makePgPermitStore
        const events = yield* Effect.provideService(makePgEventStore, Projections, [])
        const appendWithinCap = events.appendWithinCap!
        // setStatus writes the view rows of proj_p.
        const lane = { projectId: "proj_p", toolkit: "lc_demo", cap: 2 }
        const run = (streamId: string) => [{
          streamId,
          streamType: "execution",
          expectedVersion: 0,
          events: [{ eventId: `evt_${streamId}`, type: "ExecutionRequested", schemaVersion: 1, data: {} }]
        }]
        const recorded = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.map(sql<{ stream_id: string }>`SELECT stream_id FROM streams WHERE stream_id LIKE 'lc_%' ORDER BY 1`, (rows) =>
            rows.map((row) => row.stream_id)))

        // One permit held (by a running execution): one left, so the run commits and takes none.
        assert.isTrue(yield* permits.tryInsert({ projectId: "proj_p", toolkit: "lc_demo", executionId: "exe_lc1" }, 2))
        yield* setStatus("exe_lc1", "running")
        yield* appendWithinCap(run("lc_a"), lane)
        assert.isTrue(yield* permits.tryInsert({ projectId: "proj_p", toolkit: "lc_demo", executionId: "exe_lc2" }, 2))

        // The lane is full now. A run in it is refused with LaneFull while a run in another lane
        // and a plain append that share its commit go through.
        const [full, other, plain] = yield* whileWriterHeld(appendWithinCap, "lc_slack", Effect.all([
          Effect.exit(appendWithinCap(run("lc_b"), lane)),
          Effect.exit(appendWithinCap(run("lc_c"), { ...lane, toolkit: "lc_http" })),
          Effect.exit(events.append(run("lc_d")))
        ], { concurrency: "unbounded" }))
        assert.deepStrictEqual(failures(full), ["LaneFull"])
        assert.isTrue(Exit.isSuccess(other))
        assert.isTrue(Exit.isSuccess(plain))
        assert.deepStrictEqual(yield* recorded, ["lc_a", "lc_c", "lc_d"])
        const sql = yield* SqlClient.SqlClient
        const commits = yield* sql<{ n: number }>`SELECT count(DISTINCT tx_id)::int AS n FROM events WHERE stream_id IN ('lc_c', 'lc_d')`
        assert.strictEqual(commits[0]?.n, 1)

        // A terminal holder frees its permit for the next run at once.
        yield* setStatus("exe_lc1", "succeeded")
        yield* appendWithinCap(run("lc_e"), lane)
        assert.deepStrictEqual(yield* recorded, ["lc_a", "lc_c", "lc_d", "lc_e"])
      })))

    it.effect("a commit in several statements checks the lanes too", () =>
      Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const statement of createTableStatements(thingsTable)) yield* sql.unsafe(statement)
        const permits = yield* makePgPermitStore
        const events = yield* Effect.provideService(makePgEventStore, Projections, [thingsProjection])
        const appendWithinCap = events.appendWithinCap!
        // Granted, not yet recorded: it holds the lane's only permit for a minute.
        assert.isTrue(yield* permits.tryInsert({ projectId: "proj_p", toolkit: "lc2_demo", executionId: "exe_m1" }, 1))
        yield* events.append(thing("m_seed", "x"))
        // A put, a drop (two kinds of change to one table) and a run in the full lane: refused
        // alone, the rest commit in steps.
        const [full, put, drop] = yield* whileWriterHeld(appendWithinCap, "lc2_slack", Effect.all([
          Effect.exit(appendWithinCap(thing("m_b", "b"), { projectId: "proj_p", toolkit: "lc2_demo", cap: 1 })),
          Effect.exit(events.append(thing("m_c", "c"))),
          Effect.exit(events.append(thing("m_d", "x", "Drop")))
        ], { concurrency: "unbounded" }))
        assert.deepStrictEqual(failures(full), ["LaneFull"])
        assert.isTrue(Exit.isSuccess(put))
        assert.isTrue(Exit.isSuccess(drop))
        const rows = yield* sql<{ id: string }>`SELECT id FROM v_lc_things ORDER BY id`
        assert.deepStrictEqual(rows.map((row) => row.id), ["c", "held_lc2_slack"])
        const commits = yield* sql<{ n: number }>`SELECT count(DISTINCT tx_id)::int AS n FROM events WHERE stream_id IN ('m_c', 'm_d')`
        assert.strictEqual(commits[0]?.n, 1)
      })))
  })
})
