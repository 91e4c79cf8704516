/**
 * The append-only event log: one service, two implementations (memory here, Postgres in
 * PgEventStore.ts). Appends are atomic across the streams of one call and checked against each
 * stream's expected version; the global feed is read from a checkpoint and never skips an event
 * that commits late.
 */
import { Context, Effect, Schema, Stream } from "effect"

/**
 * A position in the global feed. On Postgres `tx` is the committing transaction's xid8 and
 * `seq` the event's global position; the feed is ordered by (tx, seq). In memory both grow
 * together.
 */
export interface Position {
  readonly tx: bigint
  readonly seq: bigint
}

export const START: Position = { tx: 0n, seq: 0n }

export const comparePositions = (a: Position, b: Position): number =>
  a.tx < b.tx ? -1 : a.tx > b.tx ? 1 : a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0

export const formatPosition = (p: Position): string => `${p.tx}:${p.seq}`

export const parsePosition = (s: string): Position | undefined => {
  const match = /^(\d{1,20}):(\d{1,20})$/.exec(s)
  return match ? { tx: BigInt(match[1]!), seq: BigInt(match[2]!) } : undefined
}

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

export interface NewEvent {
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: Json
  readonly metadata?: { readonly [key: string]: Json } | undefined
}

export interface RecordedEvent {
  readonly streamId: string
  readonly streamType: string
  readonly version: number
  readonly position: Position
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: Json
  readonly metadata: { readonly [key: string]: Json }
  /** Epoch milliseconds of the append. */
  readonly createdAt: number
}

/** The metadata of an event appended without any: one frozen object, not one per event. */
export const NO_METADATA: { readonly [key: string]: Json } = Object.freeze({})

/**
 * The fields an appended event has before and after its commit, set in one constructor, so the
 * stores' event classes share one shape. Each store adds `position` and `createdAt` its own way.
 */
export abstract class EventFields {
  readonly streamId: string
  readonly streamType: string
  readonly version: number
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: Json
  readonly metadata: { readonly [key: string]: Json }
  constructor(streamId: string, streamType: string, version: number, event: NewEvent) {
    this.streamId = streamId
    this.streamType = streamType
    this.version = version
    this.eventId = event.eventId
    this.type = event.type
    this.schemaVersion = event.schemaVersion
    this.data = event.data
    this.metadata = event.metadata ?? NO_METADATA
  }
}

export interface AppendRequest {
  readonly streamId: string
  readonly streamType: string
  /** The stream's current version; 0 for a stream that must not exist yet. */
  readonly expectedVersion: number
  readonly events: ReadonlyArray<NewEvent>
}

export class ConcurrencyConflict extends Schema.TaggedError<ConcurrencyConflict>()("ConcurrencyConflict", {
  streamId: Schema.String,
  expectedVersion: Schema.Int
}) {
  override get message() {
    return `stream ${this.streamId} is not at version ${this.expectedVersion}`
  }
}

/** A lane of execution permits (ExecutionPermits.ts): a project's toolkit and its cap. */
export interface PermitLane {
  readonly projectId: string
  readonly toolkit: string
  readonly cap: number
}

/** `appendWithinCap` refused: the lane held `cap` permits at the commit. Nothing was appended. */
export class LaneFull extends Schema.TaggedError<LaneFull>()("LaneFull", {
  projectId: Schema.String,
  toolkit: Schema.String
}) {}

/** A storage fault (connection lost, constraint the code did not expect). */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  cause: Schema.Defect()
}) {}

export interface EventStoreShape {
  /** Appends every request in one atomic commit, or none of them. */
  readonly append: (
    requests: ReadonlyArray<AppendRequest>
  ) => Effect.Effect<ReadonlyArray<RecordedEvent>, ConcurrencyConflict | StoreUnavailable>
  /**
   * As `append`, but it commits only while `lane` holds fewer than `cap` permits, checked under
   * the lane's lock inside the commit itself. A pure tool's sync run uses it instead of a grant
   * before and a release after: it holds its permit for no time that anyone can observe. Only a
   * store that keeps the permits in its own database has it (Postgres); elsewhere the permit is
   * taken beforehand as for any tool.
   */
  readonly appendWithinCap?: (
    requests: ReadonlyArray<AppendRequest>,
    lane: PermitLane
  ) => Effect.Effect<ReadonlyArray<RecordedEvent>, ConcurrencyConflict | LaneFull | StoreUnavailable>
  readonly readStream: (
    streamId: string,
    fromVersion?: number
  ) => Effect.Effect<ReadonlyArray<RecordedEvent>, StoreUnavailable>
  /** Up to `limit` committed events after `after`, in feed order. */
  readonly readAll: (after: Position, limit: number) => Effect.Effect<ReadonlyArray<RecordedEvent>, StoreUnavailable>
  /** The position of the newest committed event that a reader may safely checkpoint past. */
  readonly head: Effect.Effect<Position, StoreUnavailable>
  /** Every committed event after `after`, forever: a notification is a hint, polling the guarantee. */
  readonly follow: (after: Position, options?: { readonly batchSize?: number }) => Stream.Stream<RecordedEvent, StoreUnavailable>
  /** Streams ids of one type (for start-up recovery scans). */
  readonly streamIds: (streamType: string) => Effect.Effect<ReadonlyArray<string>, StoreUnavailable>
}

export class EventStore extends Context.Service<EventStore, EventStoreShape>()("app/infra/EventStore") {}

/** Something that can wake followers: a generation counter bumped on every append. */
export interface FeedSignal {
  readonly generation: () => number
  /** Waits until the generation moves past `since`, or `maxWait` passes. */
  readonly wait: (since: number) => Effect.Effect<void>
}

/** Polls `readAll` from `after`, waiting on the signal whenever it has caught up. */
export const followByPolling = (
  readAll: EventStoreShape["readAll"],
  after: Position,
  signal: FeedSignal,
  batchSize: number
): Stream.Stream<RecordedEvent, StoreUnavailable> =>
  Stream.suspend(() => {
    let cursor = after
    const pull: Effect.Effect<ReadonlyArray<RecordedEvent>, StoreUnavailable> = Effect.suspend(() => {
      const since = signal.generation()
      return Effect.flatMap(readAll(cursor, batchSize), (events) => {
        if (events.length === 0) return Effect.flatMap(signal.wait(since), () => pull)
        cursor = events[events.length - 1]!.position
        return Effect.succeed(events)
      })
    })
    return Stream.fromEffectRepeat(pull).pipe(Stream.flatMap((events) => Stream.fromIterable(events)))
  })
