/**
 * The event log on Postgres (architecture.md, "Event log"). Appends from many actors share one
 * transaction (group commit): a writer fiber takes every pending append, makes the conditional
 * stream-version writes the transaction's first statement, inserts the events with the
 * transaction's xid8, applies inline projections and notifies followers, all in one commit.
 * A lost race fails only the appends whose streams moved; the rest are retried at once.
 */
import { Data, Deferred, Effect, Layer, Queue, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import {
  type AppendRequest,
  ConcurrencyConflict,
  EventStore,
  type EventStoreShape,
  followByPolling,
  type Json,
  type Position,
  type RecordedEvent,
  StoreUnavailable
} from "./EventStore.ts"
import { Wakeup } from "./MemoryEventStore.ts"
import { projectAll, type Projection, Projections } from "./Projection.ts"
import { applyChanges, specMap } from "./PgViewStore.ts"

export const NOTIFY_CHANNEL = "app_events"
const MAX_BATCH = 256

interface Pending {
  readonly requests: ReadonlyArray<AppendRequest>
  readonly done: Deferred.Deferred<ReadonlyArray<RecordedEvent>, ConcurrencyConflict | StoreUnavailable>
}

/** Raised inside the batch transaction to roll it back when some streams moved. */
class BatchConflict extends Data.TaggedError("BatchConflict")<{ readonly streams: ReadonlySet<string> }> {}

interface EventRow {
  readonly stream_id: string
  readonly stream_type: string
  readonly stream_version: number
  readonly global_position: bigint
  readonly tx: string
  readonly event_id: string
  readonly event_type: string
  readonly schema_version: number
  readonly data: Json
  readonly metadata: { readonly [key: string]: Json }
  readonly created_at: Date
}

export const toRecorded = (row: EventRow): RecordedEvent => ({
  streamId: row.stream_id,
  streamType: row.stream_type,
  version: Number(row.stream_version),
  position: { tx: BigInt(row.tx), seq: BigInt(row.global_position) },
  eventId: row.event_id,
  type: row.event_type,
  schemaVersion: Number(row.schema_version),
  data: row.data,
  metadata: row.metadata,
  createdAt: row.created_at.getTime()
})

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

/** Reads of the feed: only transactions older than every running one, so none is skipped. */
export const readFeed = (sql: SqlClient.SqlClient, after: Position, limit: number) =>
  sql<EventRow>`
    SELECT e.stream_id, s.stream_type, e.stream_version, e.global_position, e.tx_id::text AS tx, e.event_id,
           e.event_type, e.schema_version, e.data, e.metadata, e.created_at
    FROM events e JOIN streams s USING (stream_id)
    WHERE (e.tx_id, e.global_position) > (${after.tx.toString()}::xid8, ${after.seq})
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx_id, e.global_position
    LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map(toRecorded)))

export const makePgEventStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pg = yield* PgClient.PgClient
  const projections = yield* Projections
  const inline: ReadonlyArray<Projection> = projections.filter((p) => p.mode === "inline")
  const specs = specMap(projections)
  const queue = yield* Queue.unbounded<Pending>()
  const wakeup = new Wakeup("1 second")

  const commitBatch = (batch: ReadonlyArray<Pending>) =>
    sql.withTransaction(
      Effect.gen(function*() {
        const requests = batch.flatMap((p) => p.requests)
        const moved = yield* sql<{ stream_id: string }>`
          WITH input AS (
            SELECT * FROM unnest(${requests.map((r) => r.streamId)}::text[], ${requests.map((r) => r.streamType)}::text[],
                                 ${requests.map((r) => r.expectedVersion)}::int4[], ${requests.map((r) => r.expectedVersion + r.events.length)}::int4[])
              AS i(stream_id, stream_type, expected, next)
          ), updated AS (
            UPDATE streams s SET version = i.next FROM input i
            WHERE s.stream_id = i.stream_id AND i.expected > 0 AND s.version = i.expected
            RETURNING s.stream_id
          ), inserted AS (
            INSERT INTO streams (stream_id, stream_type, version)
            SELECT stream_id, stream_type, next FROM input WHERE expected = 0
            ON CONFLICT DO NOTHING RETURNING stream_id
          )
          SELECT stream_id FROM updated UNION ALL SELECT stream_id FROM inserted`
        const ok = new Set(moved.map((row) => row.stream_id))
        const conflicts = new Set(requests.filter((r) => !ok.has(r.streamId)).map((r) => r.streamId))
        if (conflicts.size > 0) return yield* new BatchConflict({ streams: conflicts })

        const flat = requests.flatMap((r) => r.events.map((e, i) => ({ r, e, version: r.expectedVersion + i + 1 })))
        const rows = yield* sql<{ stream_id: string; stream_version: number; global_position: bigint; tx: string; created_at: Date }>`
          INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata)
          SELECT stream_id, stream_version, event_id, event_type, schema_version, data::jsonb, metadata::jsonb
          FROM unnest(${flat.map((f) => f.r.streamId)}::text[], ${flat.map((f) => f.version)}::int4[],
                      ${flat.map((f) => f.e.eventId)}::text[], ${flat.map((f) => f.e.type)}::text[],
                      ${flat.map((f) => f.e.schemaVersion)}::int4[], ${flat.map((f) => JSON.stringify(f.e.data))}::text[],
                      ${flat.map((f) => JSON.stringify(f.e.metadata ?? {}))}::text[])
            AS u(stream_id, stream_version, event_id, event_type, schema_version, data, metadata)
          RETURNING stream_id, stream_version, global_position, tx_id::text AS tx, created_at`
        const placed = new Map(rows.map((row) => [`${row.stream_id}\u0000${row.stream_version}`, row]))
        const recorded: Array<RecordedEvent> = flat.map(({ r, e, version }) => {
          const row = placed.get(`${r.streamId}\u0000${version}`)!
          return {
            streamId: r.streamId,
            streamType: r.streamType,
            version,
            position: { tx: BigInt(row.tx), seq: BigInt(row.global_position) },
            eventId: e.eventId,
            type: e.type,
            schemaVersion: e.schemaVersion,
            data: e.data,
            metadata: e.metadata ?? {},
            createdAt: row.created_at.getTime()
          }
        })
        for (const projection of inline) yield* applyChanges(sql, specs, projectAll(projection, recorded))
        yield* sql`SELECT pg_notify(${NOTIFY_CHANNEL}, '')`
        return recorded
      })
    )

  /** Splits a commit's events back to the appends that made them. */
  const settle = (batch: ReadonlyArray<Pending>, recorded: ReadonlyArray<RecordedEvent>) =>
    Effect.forEach(batch, (pending) => {
      const count = pending.requests.reduce((n, r) => n + r.events.length, 0)
      const mine = recorded.slice(0, count)
      recorded = recorded.slice(count)
      return Deferred.succeed(pending.done, mine)
    }, { discard: true })

  const runBatch = (batch: ReadonlyArray<Pending>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (batch.length === 0) return Effect.void
      // A stream may appear once per commit; later appends to it wait for the next one.
      const seen = new Set<string>()
      const now: Array<Pending> = []
      const later: Array<Pending> = []
      for (const pending of batch) {
        const ids = pending.requests.map((r) => r.streamId)
        if (ids.some((id) => seen.has(id)) || new Set(ids).size !== ids.length) later.push(pending)
        else {
          ids.forEach((id) => seen.add(id))
          now.push(pending)
        }
      }
      if (now.length === 0) {
        // A single append that names one stream twice can never commit.
        return Effect.forEach(later, (p) =>
          Deferred.fail(p.done, unavailable(new Error("an append names the same stream twice"))), { discard: true })
      }
      return commitBatch(now).pipe(
        Effect.flatMap((recorded) => settle(now, recorded)),
        Effect.catchTag("BatchConflict", (conflict) => {
          const failed = now.filter((p) => p.requests.some((r) => conflict.streams.has(r.streamId)))
          const retry = now.filter((p) => !failed.includes(p))
          return Effect.forEach(failed, (p) => {
            const request = p.requests.find((r) => conflict.streams.has(r.streamId))!
            return Deferred.fail(p.done, new ConcurrencyConflict({ streamId: request.streamId, expectedVersion: request.expectedVersion }))
          }, { discard: true }).pipe(Effect.andThen(runBatch(retry)))
        }),
        Effect.catch((error: SqlError) =>
          Effect.forEach(now, (p) => Deferred.fail(p.done, unavailable(error)), { discard: true })
        ),
        Effect.andThen(runBatch(later))
      )
    })

  const writer = Queue.takeBetween(queue, 1, MAX_BATCH).pipe(Effect.flatMap(runBatch), Effect.forever)
  yield* Effect.forkScoped(writer)
  yield* Effect.forkScoped(writer)

  // NOTIFY is only a hint: followers poll anyway, so a lost listener costs latency, not events.
  const listener = Effect.scoped(
    Effect.gen(function*() {
      const notifications = yield* pg.listen(NOTIFY_CHANNEL)
      while (true) {
        yield* Queue.take(notifications)
        wakeup.notify()
      }
    })
  ).pipe(Effect.retry(Schedule.spaced("1 second")), Effect.ignore)
  yield* Effect.forkScoped(listener)

  const readAll = (after: Position, limit: number) => readFeed(sql, after, limit).pipe(Effect.mapError(unavailable))

  const store: EventStoreShape = {
    append: (requests) =>
      Effect.gen(function*() {
        if (requests.length === 0) return []
        const done = yield* Deferred.make<ReadonlyArray<RecordedEvent>, ConcurrencyConflict | StoreUnavailable>()
        yield* Queue.offer(queue, { requests, done })
        return yield* Deferred.await(done)
      }),
    readStream: (streamId, fromVersion = 1) =>
      sql<EventRow>`
        SELECT e.stream_id, s.stream_type, e.stream_version, e.global_position, e.tx_id::text AS tx, e.event_id,
               e.event_type, e.schema_version, e.data, e.metadata, e.created_at
        FROM events e JOIN streams s USING (stream_id)
        WHERE e.stream_id = ${streamId} AND e.stream_version >= ${fromVersion}
        ORDER BY e.stream_version`.pipe(Effect.map((rows) => rows.map(toRecorded)), Effect.mapError(unavailable)),
    readAll,
    head: sql<{ tx: string; seq: bigint }>`
      SELECT tx_id::text AS tx, global_position AS seq FROM events
      WHERE tx_id < pg_snapshot_xmin(pg_current_snapshot())
      ORDER BY tx_id DESC, global_position DESC LIMIT 1`.pipe(
      Effect.map((rows) => (rows[0] ? { tx: BigInt(rows[0].tx), seq: BigInt(rows[0].seq) } : { tx: 0n, seq: 0n })),
      Effect.mapError(unavailable)
    ),
    follow: (after, options) => followByPolling(readAll, after, wakeup, options?.batchSize ?? 500),
    streamIds: (streamType) =>
      sql<{ stream_id: string }>`SELECT stream_id FROM streams WHERE stream_type = ${streamType}`.pipe(
        Effect.map((rows) => rows.map((row) => row.stream_id)),
        Effect.mapError(unavailable)
      )
  }
  return store
})

export const layerPgEventStore: Layer.Layer<EventStore, never, SqlClient.SqlClient | PgClient.PgClient | Projections> =
  Layer.effect(EventStore, makePgEventStore)

