/**
 * The one retry shape of every loop that waits for something outside to come back (the
 * database, a lease): exponential from 100 ms, jittered, capped at `cap`, so a long outage
 * costs one attempt every few seconds, not a tight loop.
 */
import { Duration, Effect, Schedule } from "effect"

export const backoff = (cap: Duration.Input = "5 seconds") => {
  const limit = Duration.fromInputUnsafe(cap)
  return Schedule.exponential("100 millis").pipe(
    Schedule.jittered,
    Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, limit)))
  )
}
