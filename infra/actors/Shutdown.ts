/**
 * A clean stop (decisions.md section 9: SIGTERM): the process stops taking new work, lets what
 * is in flight finish within a deadline (10 s), and only then lets its layers close, which
 * interrupts what is left and gives its leases up (Runner.ts).
 *
 * Why a service of its own: the HTTP server and the actors stop together, each in its own way.
 * Closing the layers alone would interrupt a webhook attempt mid-flight (its receiver may have
 * taken it, and the next process would send it again) and cut requests that were being
 * answered. So each participant registers what "finish" means for it (a lane: send no new
 * attempt, write the records of those made, stop), and the HTTP server's drain
 * (http/server/Drain.ts) runs them all while it finishes its own requests.
 */
import { Context, Deferred, Effect, Layer, Scope } from "effect"

export interface ShutdownShape {
  /** True once the stop has begun: no new attempt, no new lane; readiness answers 503. */
  readonly stopping: () => boolean
  /** Milliseconds until the stop cuts what is left: Infinity until it begins. */
  readonly remainingMs: () => number
  /**
   * Registers `finish` for as long as the current scope lives: when the stop begins it runs
   * with the others, and must end once the participant's work in flight is done.
   */
  readonly onStop: (name: string, finish: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Begins the stop and waits, at most `withinMs`, for every participant to finish; answers the
   * names of those that did not.
   */
  readonly stop: (withinMs: number) => Effect.Effect<ReadonlyArray<string>>
  /**
   * Cuts a stop under way short (a second SIGTERM or Ctrl-C): `stop` answers at once with what
   * is unfinished, and what is in flight is cut once requests still waiting have had
   * HURRY_GRACE_MS to be answered (`whenHurried`).
   */
  readonly hurry: () => void
  /** Completes when `hurry` is called: a participant answers what waits on it at once. */
  readonly whenHurried: Effect.Effect<void>
}

/**
 * After a second signal, how long requests have to be answered before their connections are
 * closed: a sync call waiting for an execution the stop cuts learns its id (202 and Location).
 */
export const HURRY_GRACE_MS = 250

export class Shutdown extends Context.Service<Shutdown, ShutdownShape>()("app/infra/actors/Shutdown") {}

export const make = (): ShutdownShape => {
  let stopping = false
  let deadline = Number.POSITIVE_INFINITY
  const hurried = Deferred.makeUnsafe<void>()
  const participants = new Map<symbol, { readonly name: string; readonly finish: Effect.Effect<void> }>()
  return {
    stopping: () => stopping,
    remainingMs: () => Math.max(0, deadline - Date.now()),
    onStop: (name, finish) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const id = Symbol(name)
          participants.set(id, { name, finish })
          return id
        }),
        (id) => Effect.sync(() => void participants.delete(id))
      ).pipe(Effect.asVoid),
    stop: (withinMs) =>
      Effect.suspend(() => {
        stopping = true
        deadline = Date.now() + withinMs
        const unfinished = new Set([...participants.values()].map((p) => p.name))
        return Effect.forEach(
          [...participants.values()],
          (participant) => Effect.tap(participant.finish, () => Effect.sync(() => void unfinished.delete(participant.name))),
          { concurrency: "unbounded", discard: true }
        ).pipe(
          Effect.timeoutOption(withinMs),
          Effect.raceFirst(Deferred.await(hurried)),
          Effect.map(() => [...unfinished])
        )
      }),
    hurry: () => {
      deadline = Math.min(deadline, Date.now() + HURRY_GRACE_MS)
      Deferred.doneUnsafe(hurried, Effect.void)
    },
    whenHurried: Deferred.await(hurried)
  }
}

export const layer: Layer.Layer<Shutdown> = Layer.sync(Shutdown, make)
