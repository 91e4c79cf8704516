/**
 * Handlers do not declare the store's failures: a `StoreUnavailable` becomes a defect carrying
 * what the store met, which the envelope answers 503 when it is an outage (a lost connection)
 * and 500 otherwise (http/server/Envelope.ts).
 */
import { Effect } from "effect"
import { StoreUnavailable } from "../../infra/eventlog/EventStore.ts"

export const storeFailuresAsDefects = <A, E, R>(
  self: Effect.Effect<A, E | StoreUnavailable, R>
): Effect.Effect<A, Exclude<E, StoreUnavailable>, R> =>
  Effect.catchIf(
    self,
    (error): error is StoreUnavailable => error instanceof StoreUnavailable,
    (error) => Effect.die(error.cause)
  ) as Effect.Effect<A, Exclude<E, StoreUnavailable>, R>
