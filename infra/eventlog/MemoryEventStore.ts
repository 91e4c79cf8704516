/**
 * The event store without a database: arrays and maps in this process, lost on restart. Inline
 * projections are applied to the memory tables in the same synchronous step as the append, so
 * the guarantees match the Postgres store's single commit.
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import {
  type AppendRequest,
  ConcurrencyConflict,
  EventFields,
  EventStore,
  type FeedSignal,
  type EventStoreShape,
  followByPolling,
  type NewEvent,
  type Position,
  type RecordedEvent
} from "./EventStore.ts"
import { projectAll, Projections } from "./Projection.ts"
import { MemoryTables, memoryViewStore, ViewStore } from "./ViewStore.ts"
import { recordAppend } from "../observability/Metrics.ts"

/**
 * Wakes followers when something is appended; a waiter also gives up after `maxWait`. Wake-ups
 * are coalesced: every notify of one turn of the event loop wakes the waiters once, on the next
 * turn, so a follower reads a batch instead of running once per append. A wait is one callback
 * and one timer (no racing fibers).
 */
export class Wakeup implements FeedSignal {
  private readonly waiters = new Set<() => void>()
  private counter = 0
  private scheduled = false
  private readonly maxWaitMs: number

  constructor(maxWait: Duration.Input) {
    this.maxWaitMs = Duration.toMillis(Duration.fromInputUnsafe(maxWait))
  }

  readonly generation = () => this.counter

  notify(): void {
    this.counter++
    if (this.scheduled || this.waiters.size === 0) return
    this.scheduled = true
    setImmediate(this.flush)
  }

  private readonly flush = () => {
    this.scheduled = false
    const waiters = [...this.waiters]
    this.waiters.clear()
    for (const wake of waiters) wake()
  }

  readonly wait = (since: number): Effect.Effect<void> =>
    Effect.callback<void>((resume) => {
      if (this.counter !== since) return resume(Effect.void)
      const wake = () => {
        clearTimeout(timer)
        this.waiters.delete(wake)
        resume(Effect.void)
      }
      const timer = setTimeout(wake, this.maxWaitMs)
      this.waiters.add(wake)
      return Effect.sync(() => {
        clearTimeout(timer)
        this.waiters.delete(wake)
      })
    })
}

/**
 * A recorded event as the memory log keeps it: its position is made when read, from its place in
 * the log, instead of two objects kept per event (the log holds every event for its lifetime).
 * A class, so every event has one shape from its constructor.
 */
class MemoryEvent extends EventFields implements RecordedEvent {
  readonly createdAt: number
  readonly #seq: number
  constructor(stream: { readonly id: string; readonly type: string }, version: number, event: NewEvent, createdAt: number, seq: number) {
    super(stream.id, stream.type, version, event)
    this.createdAt = createdAt
    this.#seq = seq
  }
  get position(): Position {
    const seq = BigInt(this.#seq)
    return { tx: seq, seq }
  }
}

/**
 * What memory retention (MemoryRetention.ts) does to the log: streams forgotten whole, and the
 * head of the global log (what followers read) trimmed by age. Positions stay as they were: the
 * log remembers how many events it has dropped from its head.
 */
export interface MemoryLogShape {
  /** Drops these streams' events from `readStream` (the global log keeps them until trimmed). */
  readonly forget: (streamIds: Iterable<string>) => void
  /** Drops streams of `streamType` whose last event is older than `beforeMs`, but those in `keep`; answers how many. */
  readonly forgetIdle: (streamType: string, beforeMs: number, keep?: ReadonlySet<string>) => number
  /** Drops events older than `beforeMs` from the head of the global log; answers how many. */
  readonly trimHead: (beforeMs: number) => number
  /** Events in the global log, and streams kept. */
  readonly sizes: () => { readonly events: number; readonly streams: number }
}

export class MemoryLog extends Context.Service<MemoryLog, MemoryLogShape>()("app/infra/MemoryLog") {}

export const makeMemoryEventStore = (tables: MemoryTables, projections: Projections["Service"]) =>
  makeMemoryLog(tables, projections).store

export const makeMemoryLog = (tables: MemoryTables, projections: Projections["Service"]) => {
  let log: Array<RecordedEvent> = []
  /** Events dropped from the head of `log`: event n sits at index n - 1 - dropped. */
  let dropped = 0
  // The stream's id is kept once and shared by its events.
  const streams = new Map<string, { id: string; type: string; events: Array<RecordedEvent> }>()
  const wakeup = new Wakeup("1 second")
  const inline = projections.filter((p) => p.mode === "inline")

  const append = (requests: ReadonlyArray<AppendRequest>) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      for (const request of requests) {
        const current = streams.get(request.streamId)?.events.length ?? 0
        if (current !== request.expectedVersion) {
          return Effect.fail(new ConcurrencyConflict({ streamId: request.streamId, expectedVersion: request.expectedVersion }))
        }
      }
      const recorded: Array<RecordedEvent> = []
      for (const request of requests) {
        let stream = streams.get(request.streamId)
        if (stream === undefined) {
          stream = { id: request.streamId, type: request.streamType, events: [] }
          streams.set(request.streamId, stream)
        }
        for (const event of request.events) {
          const record = new MemoryEvent(stream, stream.events.length + 1, event, now, dropped + log.length + 1)
          stream.events.push(record)
          log.push(record)
          recorded.push(record)
        }
      }
      for (const projection of inline) {
        const changes = projectAll(projection, recorded)
        if (changes.length > 0) tables.apply(changes)
      }
      recordAppend(recorded.length)
      wakeup.notify()
      return Effect.succeed(recorded as ReadonlyArray<RecordedEvent>)
    })

  // Memory positions are dense: event n sits at index n - 1 - dropped. A follower behind the
  // trimmed head (more than the retention window) goes on from the oldest event kept.
  const readAll = (after: Position, limit: number) =>
    Effect.sync(() => {
      const from = Math.max(0, Number(after.seq) - dropped)
      return log.slice(from, from + limit) as ReadonlyArray<RecordedEvent>
    })

  const store: EventStoreShape = {
    append,
    readStream: (streamId, fromVersion = 1) =>
      Effect.sync(() => (streams.get(streamId)?.events ?? []).slice(Math.max(0, fromVersion - 1))),
    readAll,
    head: Effect.sync(() => log[log.length - 1]?.position ?? { tx: BigInt(dropped), seq: BigInt(dropped) }),
    follow: (after, options) => followByPolling(readAll, after, wakeup, options?.batchSize ?? 500),
    streamIds: (streamType) =>
      Effect.sync(() => [...streams.entries()].filter(([, s]) => s.type === streamType).map(([id]) => id))
  }
  const maintenance: MemoryLogShape = {
    forget: (streamIds) => {
      for (const id of streamIds) streams.delete(id)
    },
    forgetIdle: (streamType, beforeMs, keep) => {
      let count = 0
      for (const [id, stream] of streams) {
        const last = stream.events[stream.events.length - 1]
        if (stream.type === streamType && last !== undefined && last.createdAt < beforeMs && keep?.has(id) !== true) {
          streams.delete(id)
          count++
        }
      }
      return count
    },
    trimHead: (beforeMs) => {
      let count = 0
      while (count < log.length && log[count]!.createdAt < beforeMs) count++
      if (count > 0) {
        log = log.slice(count)
        dropped += count
      }
      return count
    },
    sizes: () => ({ events: log.length, streams: streams.size })
  }
  return { store, maintenance }
}

/** The memory tables themselves, for the in-process projection runner and tests. */
export class MemoryTablesService extends Context.Service<MemoryTablesService, MemoryTables>()("app/infra/MemoryTables") {}

/** Event store, view store and memory tables, all in this process. */
export const layerMemory: Layer.Layer<EventStore | ViewStore | MemoryTablesService | MemoryLog, never, Projections> = Layer.effectContext(
  Effect.gen(function*() {
    const projections = yield* Projections
    const keys = new Map<string, ReadonlyArray<string>>()
    for (const projection of projections) for (const table of projection.tables) keys.set(table.name, table.primaryKey)
    const tables = new MemoryTables(keys)
    const { store, maintenance } = makeMemoryLog(tables, projections)
    return Context.make(EventStore, store).pipe(
      Context.add(ViewStore, memoryViewStore(tables)),
      Context.add(MemoryTablesService, tables),
      Context.add(MemoryLog, maintenance)
    )
  })
)
