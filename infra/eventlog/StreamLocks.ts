/**
 * Commands on one stream, one at a time in this process: an actor takes its messages in turn
 * (style.md). Without it, commands arriving together on one stream raced for its next version
 * and all but one folded and decided again, each round; twenty at once on Postgres lost the race
 * eight times over and failed (CommandHandler.ts gives up after eight). Across processes the
 * version check still decides, and a loser starts over.
 *
 * A lock exists while someone holds or waits for it, so streams touched once leave nothing behind.
 */
import { Effect, Semaphore } from "effect"

interface Held {
  readonly lock: Semaphore.Semaphore
  users: number
}

export type StreamLocks = <A, E, R>(streamIds: ReadonlyArray<string>, effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

export const makeStreamLocks = (): StreamLocks => {
  const held = new Map<string, Held>()
  const one = <A, E, R>(streamId: string, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => {
      let entry = held.get(streamId)
      if (entry === undefined) {
        entry = { lock: Semaphore.makeUnsafe(1), users: 0 }
        held.set(streamId, entry)
      }
      entry.users++
      const taken = entry
      return taken.lock.withPermits(1)(effect).pipe(
        Effect.ensuring(Effect.sync(() => {
          if (--taken.users === 0) held.delete(streamId)
        }))
      )
    })
  // Several streams are taken in one order (sorted), so two commands never wait on each other.
  return (streamIds, effect) => [...new Set(streamIds)].toSorted().reduceRight((inner, streamId) => one(streamId, inner), effect)
}
