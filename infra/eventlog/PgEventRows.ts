/**
 * The rows of the event log on Postgres and the SQL of an append (PgEventStore.ts commits them):
 * events as read back (a feed row parses its JSON only when asked), the CTEs and parameter arrays
 * of the conditional stream writes and the events insert, the events as inline projections see
 * them before their commit, and the guards' refusals that roll a commit back.
 */
import { Data, Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import {
  type AppendRequest,
  EventFields,
  type Json,
  type NewEvent,
  NO_METADATA,
  type PermitLane,
  type Position,
  type RecordedEvent
} from "./EventStore.ts"

/** An append waiting for the next commit (infra/Batcher.ts). */
export interface Append {
  readonly requests: ReadonlyArray<AppendRequest>
  /** `appendWithinCap`: the lane that must have a free permit at the commit. */
  readonly lane: PermitLane | undefined
}

/**
 * Raised inside the batch transaction to roll it back: some streams moved, or some appends'
 * permit lanes were full (named by their first stream).
 */
export class BatchConflict extends Data.TaggedError("BatchConflict")<{
  readonly reason: "moved" | "laneFull"
  readonly streams: ReadonlySet<string>
}> {}

export interface EventRow {
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

/** A feed row: `data` and `metadata` as their JSON text (`readFeed`). */
interface FeedRow extends Omit<EventRow, "data" | "metadata"> {
  readonly data: string
  readonly metadata: string
}

/**
 * An event read from the feed, whose JSON is parsed on first use: the webhook dispatcher, the
 * feed's usual reader, needs the data of one execution event in three and no metadata.
 */
class FeedEvent implements RecordedEvent {
  readonly streamId: string
  readonly streamType: string
  readonly version: number
  readonly position: Position
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly createdAt: number
  #data: Json | undefined
  #dataText: string | undefined
  #metadata: { readonly [key: string]: Json } | undefined
  readonly #metadataText: string
  constructor(row: FeedRow) {
    this.streamId = row.stream_id
    this.streamType = row.stream_type
    this.version = Number(row.stream_version)
    this.position = { tx: BigInt(row.tx), seq: BigInt(row.global_position) }
    this.eventId = row.event_id
    this.type = row.event_type
    this.schemaVersion = Number(row.schema_version)
    this.createdAt = row.created_at.getTime()
    this.#dataText = row.data
    this.#metadataText = row.metadata
  }
  get data(): Json {
    if (this.#dataText !== undefined) {
      this.#data = JSON.parse(this.#dataText) as Json
      this.#dataText = undefined
    }
    return this.#data as Json
  }
  get metadata(): { readonly [key: string]: Json } {
    return (this.#metadata ??= this.#metadataText === "{}" ? NO_METADATA : JSON.parse(this.#metadataText))
  }
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

/** Reads of the feed: only transactions older than every running one, so none is skipped. */
export const readFeed = (sql: SqlClient.SqlClient, after: Position, limit: number) =>
  sql<FeedRow>`
    SELECT e.stream_id, s.stream_type, e.stream_version, e.global_position, e.tx_id::text AS tx, e.event_id,
           e.event_type, e.schema_version, e.data::text AS data, e.metadata::text AS metadata, e.created_at
    FROM events e JOIN streams s USING (stream_id)
    WHERE (e.tx_id, e.global_position) > (${after.tx.toString()}::xid8, ${after.seq})
      AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY e.tx_id, e.global_position
    LIMIT ${limit}`.pipe(Effect.map((rows) => rows.map((row): RecordedEvent => new FeedEvent(row))))

/** The conditional stream-version writes, parameters $1-$4 (`streamParams`). */
export const STREAM_WRITES = `input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::int4[], $4::int4[]) AS i(stream_id, stream_type, expected, next)
  ), updated AS (
    UPDATE streams s SET version = i.next FROM input i
    WHERE s.stream_id = i.stream_id AND i.expected > 0 AND s.version = i.expected
    RETURNING s.stream_id
  ), inserted AS (
    INSERT INTO streams (stream_id, stream_type, version)
    SELECT stream_id, stream_type, next FROM input WHERE expected = 0
    ON CONFLICT DO NOTHING RETURNING stream_id
  )`

/** The events insert, its seven parameters from `$first` on (`eventParams`), optionally behind a guard. */
export const insertEvents = (first: number, guard?: string) => {
  const p = (i: number) => `$${first + i}`
  return `INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata)
    SELECT u.stream_id, u.stream_version, u.event_id, u.event_type, u.schema_version, u.data::jsonb, u.metadata::jsonb
    FROM ${guard === undefined ? "" : `${guard}, `}unnest(${p(0)}::text[], ${p(1)}::int4[], ${p(2)}::text[], ${p(3)}::text[],
                ${p(4)}::int4[], ${p(5)}::text[], ${p(6)}::text[])
      AS u(stream_id, stream_version, event_id, event_type, schema_version, data, metadata)
    ${guard === undefined ? "" : `WHERE ${guard}.ok`}
    RETURNING stream_id, stream_version, global_position, tx_id::text AS tx, created_at`
}

export const streamParams = (requests: ReadonlyArray<AppendRequest>): Array<unknown> => [
  requests.map((r) => r.streamId),
  requests.map((r) => r.streamType),
  requests.map((r) => r.expectedVersion),
  requests.map((r) => r.expectedVersion + r.events.length)
]

export interface Flat {
  readonly r: AppendRequest
  readonly e: NewEvent
  readonly version: number
}

export interface PlacedRow {
  readonly stream_id: string
  readonly stream_version: number
  readonly global_position: bigint
  readonly tx: string
  readonly created_at: Date
}

export const eventParams = (flat: ReadonlyArray<Flat>): Array<unknown> => [
  flat.map((f) => f.r.streamId),
  flat.map((f) => f.version),
  flat.map((f) => f.e.eventId),
  flat.map((f) => f.e.type),
  flat.map((f) => f.e.schemaVersion),
  flat.map((f) => JSON.stringify(f.e.data)),
  flat.map((f) => JSON.stringify(f.e.metadata ?? NO_METADATA))
]

const notYetPlaced = (): never => {
  throw new Error("an inline projection read an event's position or createdAt, which the commit assigns")
}

/**
 * An event as inline projections see it before its commit: no position, no commit time. The
 * refusing getters live on the prototype, so an event costs one object, not also two descriptors.
 */
export class Unplaced extends EventFields implements RecordedEvent {
  constructor({ r, e, version }: Flat) {
    super(r.streamId, r.streamType, version, e)
  }
  get position(): Position {
    return notYetPlaced()
  }
  get createdAt(): number {
    return notYetPlaced()
  }
}

/** The recorded events, in append order, from the rows the insert returned. */
export const placed = (flat: ReadonlyArray<Flat>, rows: ReadonlyArray<PlacedRow>): ReadonlyArray<RecordedEvent> => {
  const byKey = new Map(rows.map((row) => [`${row.stream_id}\u0000${row.stream_version}`, row]))
  return flat.map(({ r, e, version }) => {
    const row = byKey.get(`${r.streamId}\u0000${version}`)!
    return {
      streamId: r.streamId,
      streamType: r.streamType,
      version,
      position: { tx: BigInt(row.tx), seq: BigInt(row.global_position) },
      eventId: e.eventId,
      type: e.type,
      schemaVersion: e.schemaVersion,
      data: e.data,
      metadata: e.metadata ?? NO_METADATA,
      createdAt: row.created_at.getTime()
    }
  })
}

/**
 * The refusal of `append_guard` (streams that moved) or `append_lane_guard` (appends whose permit
 * lane was full, permitMigrations in PgExecutionPermits.ts) when one aborted a commit.
 */
const refusal = (error: unknown): BatchConflict | undefined => {
  let cause = error
  for (let depth = 0; depth < 5 && typeof cause === "object" && cause !== null; depth++) {
    const node = cause as { readonly message?: unknown; readonly detail?: unknown; readonly reason?: unknown; readonly cause?: unknown }
    if ((node.message === "append_conflict" || node.message === "append_lane_full") && typeof node.detail === "string") {
      const streams = new Set(JSON.parse(node.detail) as Array<string>)
      return new BatchConflict({ reason: node.message === "append_conflict" ? "moved" : "laneFull", streams })
    }
    cause = node.reason ?? node.cause
  }
  return undefined
}

export const toBatchConflict = (error: SqlError): Effect.Effect<never, BatchConflict | SqlError> => {
  const refused = refusal(error)
  return refused === undefined ? Effect.fail(error) : Effect.fail(refused)
}

/** The lane checks of a commit, as `append_lane_guard`'s four arrays: each append named by its first stream. */
export const laneParams = (batch: ReadonlyArray<{ readonly input: Append }>): Array<unknown> | undefined => {
  const checked = batch.filter((p) => p.input.lane !== undefined)
  return checked.length === 0 ? undefined : [
    checked.map((p) => p.input.requests[0]!.streamId),
    checked.map((p) => p.input.lane!.projectId),
    checked.map((p) => p.input.lane!.toolkit),
    checked.map((p) => p.input.lane!.cap)
  ]
}

export const LANE_GUARD = (first: number) =>
  `append_lane_guard($${first}::text[], $${first + 1}::text[], $${first + 2}::text[], $${first + 3}::int4[])`
