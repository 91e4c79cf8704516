/**
 * One reader of the log's tail per process, shared by every follower in it (the webhook
 * dispatcher, the MCP gateway's log feed, execution waiters).
 *
 * Why: each follower polled the feed itself, so every commit cost one read of its events per
 * follower. On Postgres, under trigger ingestion, those reads were the most frequent statement
 * (docs/triggers.md), each carrying the same rows. Here a follower at the tail waits for a read
 * that the others at the tail share, and the events read are kept in a window of the most recent
 * ones, from which a follower a little behind takes them without a statement.
 *
 * The window is one contiguous stretch of the feed, as `readAll` returns it (the feed is a total
 * order that only grows at its end: a late commit never appears before a position read). A
 * follower behind the window, or ahead of it, reads for itself, as before, until its position
 * falls inside the window; so every follower sees exactly the feed, in order, from where it began.
 */
import { Deferred, Effect, Exit, Stream } from "effect"
import { comparePositions, type EventStoreShape, type FeedSignal, type Position, type RecordedEvent, type StoreUnavailable } from "./EventStore.ts"

export interface SharedFeedOptions {
  /** Events kept in the window at least (trimmed in chunks past twice this). */
  readonly keep: number
  /** Events asked for per shared read. */
  readonly batchSize: number
}

/** The index of the first event in `events` (sorted by position) after `position`. */
const firstAfter = (events: ReadonlyArray<RecordedEvent>, position: Position): number => {
  let low = 0
  let high = events.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (comparePositions(events[middle]!.position, position) <= 0) low = middle + 1
    else high = middle
  }
  return low
}

export const makeSharedFeed = (readAll: EventStoreShape["readAll"], signal: FeedSignal, options: SharedFeedOptions) =>
  Effect.map(Effect.scope, (scope) => {
    /** The window: the events after `start`, up to `head`; unset until a follower first reaches the tail. */
    let window: Array<RecordedEvent> = []
    let start: Position | undefined
    let head: Position | undefined
    let reading: Deferred.Deferred<void, StoreUnavailable> | undefined
    /**
     * The signal's generation taken before the last shared read, when that read reached the
     * tail (fewer events than asked for): until the signal moves past it, nothing new can be
     * read, so followers wait instead of asking again (one read per change, not two).
     */
    let tailSince: number | undefined

    /** Moves the window to an empty one at `position`: a follower found the tail there. */
    const restartAt = (position: Position) => {
      tailSince = undefined
      window = []
      start = position
      head = position
    }

    const trim = () => {
      if (window.length <= 2 * options.keep) return
      const dropped = window.length - options.keep
      start = window[dropped - 1]!.position
      window = window.slice(dropped)
    }

    /**
     * The next read after `head`, shared by everyone at the tail. It runs in the feed's scope, so
     * a follower interrupted while waiting does not cancel it for the others.
     */
    const readShared: Effect.Effect<void, StoreUnavailable> = Effect.suspend(() => {
      if (reading !== undefined) return Deferred.await(reading)
      const done = Deferred.makeUnsafe<void, StoreUnavailable>()
      reading = done
      const from = head!
      const since = signal.generation()
      const read = Effect.exit(readAll(from, options.batchSize)).pipe(
        Effect.flatMap((exit) =>
          Effect.sync(() => {
            reading = undefined
            // The window may have moved meanwhile (a follower found the tail further on): then
            // these events are not next to it, and are left for the next read.
            if (Exit.isSuccess(exit) && head !== undefined && comparePositions(head, from) === 0) {
              for (const event of exit.value) window.push(event)
              if (exit.value.length > 0) head = exit.value[exit.value.length - 1]!.position
              tailSince = exit.value.length < options.batchSize ? since : undefined
              trim()
            }
            Deferred.doneUnsafe(done, Exit.isSuccess(exit) ? Exit.void : exit)
          })
        )
      )
      return Effect.andThen(Effect.forkIn(read, scope), Deferred.await(done))
    })

    /** The next events after `cursor` (up to `limit`), waiting at the tail until there are some. */
    const next = (cursor: Position, limit: number): Effect.Effect<ReadonlyArray<RecordedEvent>, StoreUnavailable> =>
      Effect.suspend(() => {
        const since = signal.generation()
        if (start !== undefined && head !== undefined && comparePositions(cursor, start) >= 0) {
          if (comparePositions(cursor, head) < 0) {
            const from = firstAfter(window, cursor)
            return Effect.succeed(window.slice(from, from + limit))
          }
          if (comparePositions(cursor, head) === 0) {
            if (tailSince !== undefined) {
              const reached = tailSince
              return Effect.andThen(signal.wait(reached), Effect.suspend(() => {
                if (tailSince === reached) tailSince = undefined
                return next(cursor, limit)
              }))
            }
            const before = head
            return Effect.flatMap(readShared, () =>
              head !== undefined && comparePositions(head, before) !== 0 ? next(cursor, limit) : Effect.andThen(signal.wait(since), next(cursor, limit)))
          }
        }
        // Behind the window, ahead of it, or before anyone reached the tail: read directly.
        return Effect.flatMap(readAll(cursor, limit), (events) => {
          if (events.length > 0) return Effect.succeed(events)
          // The tail is here: the window starts at it unless it is at or past it already.
          if (head === undefined || comparePositions(head, cursor) < 0) {
            restartAt(cursor)
            return next(cursor, limit)
          }
          // Nothing after it, yet the window starts further on (a position no event holds):
          // wait for a change and read again, as a lone follower would, rather than spin.
          return Effect.andThen(signal.wait(since), next(cursor, limit))
        })
      })

    const follow = (after: Position, batchSize: number): Stream.Stream<RecordedEvent, StoreUnavailable> =>
      Stream.suspend(() => {
        let cursor = after
        const pull = Effect.map(Effect.suspend(() => next(cursor, batchSize)), (events) => {
          cursor = events[events.length - 1]!.position
          return events
        })
        return Stream.fromEffectRepeat(pull).pipe(Stream.flatMap((events) => Stream.fromIterable(events)))
      })

    return { follow }
  })
