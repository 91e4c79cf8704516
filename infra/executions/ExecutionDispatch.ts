/**
 * One dispatch to a provider adapter, normalized: the tool's timeout becomes `timeout`, typed
 * adapter failures keep their code (a provider 429 stays `rate_limited` with its retryAfter),
 * and anything unexpected (a defect, a missing adapter) becomes `provider_unavailable`.
 */
import { Cause, Effect, Exit } from "effect"
import type { Schema } from "effect"
import { type NormalizedError, normalized, toNormalized } from "../../domain/Errors.ts"
import { MAX_OUTPUT_CHARS, unstorable, unstorableMessage } from "../../domain/Storable.ts"
import type { DispatchPlan } from "./ExecutionRun.ts"
import type { AdapterContext, AdapterFailure, ToolAdapter } from "../providers/Adapter.ts"

export type DispatchOutcome =
  | { readonly _tag: "Success"; readonly output: Schema.Json }
  | { readonly _tag: "Failure"; readonly error: NormalizedError }

/** The effect has already run to its end (an `Exit` is an effect that has). */
const completed = <A, E>(effect: Effect.Effect<A, E>): effect is Exit.Exit<A, E> => Exit.isExit(effect)

/**
 * An adapter's output, if the log can keep it (domain/Storable.ts); otherwise the execution fails
 * with `provider_error`, and nothing of the output is recorded.
 */
const outcomeOf = (tool: string) => (output: unknown): DispatchOutcome => {
  const reason = unstorable(output)
  if (reason !== undefined) {
    return { _tag: "Failure", error: normalized("provider_error", `The output of ${tool} ${unstorableMessage[reason]}.`) }
  }
  const text = JSON.stringify(output) as string | undefined
  if (text === undefined) return { _tag: "Failure", error: normalized("provider_error", `${tool} answered no JSON value.`) }
  if (text.length > MAX_OUTPUT_CHARS) {
    return { _tag: "Failure", error: normalized("provider_error", `The output of ${tool} is larger than ${MAX_OUTPUT_CHARS} characters of JSON.`) }
  }
  return { _tag: "Success", output: output as Schema.Json }
}

export const runAdapter = (
  adapter: ToolAdapter | undefined,
  plan: DispatchPlan,
  context: AdapterContext
): Effect.Effect<DispatchOutcome> => {
  if (adapter === undefined) {
    return Effect.succeed({ _tag: "Failure", error: normalized("provider_unavailable", `No adapter serves ${plan.tool.name}.`) })
  }
  const running = adapter.run(plan.input, context)
  const succeeded = outcomeOf(plan.tool.name)
  // An adapter that has already answered (a completed Exit, as a pure tool's synchronous run is)
  // cannot overrun its timeout: no race of two fibers and a timer for it.
  const outcome: Effect.Effect<DispatchOutcome, AdapterFailure> = completed(running)
    ? Effect.mapEager(running, succeeded)
    : running.pipe(
      Effect.timeoutOption(plan.tool.timeoutMs),
      Effect.map((result): DispatchOutcome =>
        result._tag === "Some"
          ? succeeded(result.value)
          : { _tag: "Failure", error: normalized("timeout", `${plan.tool.name} did not finish within ${plan.tool.timeoutMs} ms.`) }
      )
    )
  return outcome.pipe(
    Effect.catch((failure) => Effect.succeed<DispatchOutcome>({ _tag: "Failure", error: toNormalized(failure) })),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.as(
          Effect.logWarning(`adapter ${plan.tool.name} failed unexpectedly`, cause),
          { _tag: "Failure", error: normalized("provider_unavailable", "The provider failed unexpectedly.") } as DispatchOutcome
        )
    )
  )
}
