/**
 * Operating projections on Postgres: creating their tables at start-up, rebuilding one from the
 * log into fresh tables and swapping them in while the API keeps serving (`projections replay`),
 * and reporting checkpoints and lag (`projections status`).
 *
 * The swap takes a lock on `streams` that appends need, so no append is in flight while the
 * last events are copied and the tables renamed; appends wait for the rename, then carry on.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { createHash, randomBytes } from "node:crypto"
import { type Position, type RecordedEvent, START } from "./EventStore.ts"
import { readFeed, toRecorded } from "./PgEventRows.ts"
import { applyChanges, createTableStatements, ident, physicalName, specMap } from "./PgViewStore.ts"
import { type Projection, projectAll, Projections } from "./Projection.ts"

const REPLAY_BATCH = 2_000

export const specHash = (projection: Projection): string =>
  createHash("sha256").update(JSON.stringify({ mode: projection.mode, tables: projection.tables })).digest("hex").slice(0, 16)

interface StateRow {
  readonly name: string
  readonly spec_hash: string
  readonly checkpoint_tx: string
  readonly checkpoint_seq: bigint
}

const readState = (sql: SqlClient.SqlClient) =>
  sql<StateRow>`SELECT name, spec_hash, checkpoint_tx::text AS checkpoint_tx, checkpoint_seq FROM projection_state`

export interface ReplayProgress {
  readonly done: number
  readonly target: number
}

/** Events in the log that a replay will process (those visible now). */
const countEvents = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ n: bigint }>`SELECT count(*) AS n FROM events`, (rows) => Number(rows[0]?.n ?? 0))

/**
 * Rebuilds `projection` from position zero into fresh tables, then swaps them in. Returns the
 * number of events processed.
 */
export const replayProjection = (
  projection: Projection,
  onProgress: (progress: ReplayProgress) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<number, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Random as well as timed: two processes rebuilding at start-up must not share a table.
    const suffix = `r${Date.now().toString(36)}${randomBytes(3).toString("hex")}`
    // Cut short (Ctrl-C on `projections replay`, a start interrupted) or failed: the tables this
    // replay was filling go; the live ones were never touched. (A kill -9 leaves them behind.)
    const dropOwn = Effect.forEach(projection.tables, (table) => sql.unsafe(`DROP TABLE IF EXISTS ${ident(physicalName(table.name, suffix))}`), {
      discard: true
    }).pipe(Effect.ignore)
    return yield* rebuild(projection, suffix, onProgress).pipe(Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : dropOwn)))
  })

const rebuild = (projection: Projection, suffix: string, onProgress: (progress: ReplayProgress) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const specs = specMap([projection])
    for (const table of projection.tables) {
      for (const statement of createTableStatements(table, suffix)) yield* sql.unsafe(statement)
    }
    const target = yield* countEvents(sql)
    let done = 0
    let cursor: Position = START
    yield* onProgress({ done, target })
    while (true) {
      const batch: ReadonlyArray<RecordedEvent> = yield* readFeed(sql, cursor, REPLAY_BATCH)
      if (batch.length === 0) break
      yield* sql.withTransaction(applyChanges(sql, specs, projectAll(projection, batch), suffix))
      cursor = batch[batch.length - 1]!.position
      done += batch.length
      yield* onProgress({ done, target: Math.max(target, done) })
    }
    const tail = yield* sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`LOCK TABLE streams IN SHARE ROW EXCLUSIVE MODE`
        // With the lock held no append is in flight, so every event is committed and visible.
        const rest = (yield* sql<Parameters<typeof toRecorded>[0]>`
          SELECT e.stream_id, s.stream_type, e.stream_version, e.global_position, e.tx_id::text AS tx, e.event_id,
                 e.event_type, e.schema_version, e.data, e.metadata, e.created_at
          FROM events e JOIN streams s USING (stream_id)
          WHERE (e.tx_id, e.global_position) > (${cursor.tx.toString()}::xid8, ${cursor.seq})
          ORDER BY e.tx_id, e.global_position`).map(toRecorded)
        yield* applyChanges(sql, specs, projectAll(projection, rest), suffix)
        const last = rest.length > 0 ? rest[rest.length - 1]!.position : cursor
        const retired = `old${suffix.slice(1)}`
        for (const table of projection.tables) {
          const live = physicalName(table.name)
          yield* sql.unsafe(`ALTER TABLE IF EXISTS ${ident(live)} RENAME TO ${ident(physicalName(table.name, retired))}`)
          yield* sql.unsafe(`ALTER TABLE ${ident(physicalName(table.name, suffix))} RENAME TO ${ident(live)}`)
          yield* sql.unsafe(`DROP TABLE IF EXISTS ${ident(physicalName(table.name, retired))}`)
        }
        yield* sql`
          INSERT INTO projection_state (name, spec_hash, checkpoint_tx, checkpoint_seq, updated_at)
          VALUES (${projection.name}, ${specHash(projection)}, ${last.tx.toString()}::xid8, ${last.seq}, now())
          ON CONFLICT (name) DO UPDATE SET spec_hash = EXCLUDED.spec_hash, checkpoint_tx = EXCLUDED.checkpoint_tx,
            checkpoint_seq = EXCLUDED.checkpoint_seq, updated_at = now()`
        return rest.length
      })
    )
    done += tail
    yield* onProgress({ done, target: done })
    return done
  })

/**
 * At start-up: tables of known projections exist; a projection that is new while the log is
 * not empty, or whose tables changed shape, is rebuilt from the log before the service starts.
 */
export const ensureProjectionTables: Effect.Effect<void, SqlError, SqlClient.SqlClient | Projections> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const projections = yield* Projections
  const states = new Map((yield* readState(sql)).map((row) => [row.name, row]))
  const hasEvents = (yield* sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM events) AS any`)[0]?.any === true
  for (const projection of projections) {
    const state = states.get(projection.name)
    if (state !== undefined && state.spec_hash === specHash(projection)) continue
    // Always through a rebuild, even on an empty log: creating tables "if not exists" would keep
    // the columns of an older shape, and two processes starting together would race on it.
    if (hasEvents) yield* Effect.logInfo(`rebuilding projection ${projection.name} from the event log`)
    yield* replayProjection(projection)
  }
})

export interface ProjectionStatus {
  readonly name: string
  readonly mode: Projection["mode"]
  readonly checkpoint: string
  /** Committed events the projection has not seen; inline projections are never behind. */
  readonly lag: number
}

export const projectionStatus: Effect.Effect<ReadonlyArray<ProjectionStatus>, SqlError, SqlClient.SqlClient | Projections> =
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const projections = yield* Projections
    const states = new Map((yield* readState(sql)).map((row) => [row.name, row]))
    return yield* Effect.forEach(projections, (projection) =>
      Effect.gen(function*() {
        const state = states.get(projection.name)
        const tx = state?.checkpoint_tx ?? "0"
        const seq = state?.checkpoint_seq ?? 0n
        if (projection.mode === "inline") {
          return { name: projection.name, mode: projection.mode, checkpoint: "in commit", lag: 0 }
        }
        const lag = yield* sql<{ n: bigint }>`
          SELECT count(*) AS n FROM events
          WHERE (tx_id, global_position) > (${tx}::xid8, ${seq}) AND tx_id < pg_snapshot_xmin(pg_current_snapshot())`
        return { name: projection.name, mode: projection.mode, checkpoint: `${tx}:${seq}`, lag: Number(lag[0]?.n ?? 0) }
      }))
  })
