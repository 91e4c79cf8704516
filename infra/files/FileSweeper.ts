/**
 * Physical cleanup of expired staged files (spec, "Limits: Files"): at start-up, 100-row
 * batches until none is left; then at most 100 expired rows once a minute. One fiber per
 * process runs the batches one after another, and the Postgres backend takes an advisory lock
 * inside each batch's transaction, so two sweeps never overlap, in one process or across
 * several. Reads already hide expired files, so cleanup is only about space.
 */
import { Duration, Effect, Layer } from "effect"
import { StagedFiles } from "./StagedFiles.ts"

export const SWEEP_BATCH = 100
export const SWEEP_INTERVAL = Duration.minutes(1)

/** Start-up cleanup: batches until one comes back short, or another process is sweeping. */
export const drainExpired = Effect.gen(function*() {
  const files = yield* StagedFiles
  let total = 0
  while (true) {
    const result = yield* files.sweep(SWEEP_BATCH)
    total += result.deleted
    if (!result.ran || result.deleted < SWEEP_BATCH) return total
  }
})

const logFailure = (cause: unknown) => Effect.logWarning("staged file sweep failed; retrying at the next interval", cause)

/**
 * The sweeper as a scoped background fiber: it stops when the layer is released. With `drain`
 * (memory mode) each interval removes every expired file, not one batch: memory must not grow
 * with a steady upload rate above a batch a minute, and there is no lock to hold short.
 */
export const layerSweeper = (options: { readonly interval?: Duration.Input; readonly drain?: boolean } = {}): Layer.Layer<never, never, StagedFiles> =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const files = yield* StagedFiles
      const interval = options.interval ?? SWEEP_INTERVAL
      const startup = drainExpired.pipe(
        Effect.tap((total) => (total > 0 ? Effect.logInfo(`reclaimed ${total} expired staged files at start-up`) : Effect.void)),
        Effect.catch(logFailure)
      )
      const periodic = Effect.sleep(interval).pipe(
        Effect.andThen(options.drain === true ? Effect.asVoid(drainExpired.pipe(Effect.provideService(StagedFiles, files))) : Effect.asVoid(files.sweep(SWEEP_BATCH))),
        Effect.catch(logFailure),
        Effect.forever
      )
      yield* Effect.forkScoped(Effect.andThen(startup, periodic).pipe(Effect.provideService(StagedFiles, files)))
    })
  )
