/**
 * One dispatch to a provider adapter, normalized: the tool's timeout becomes `timeout`, typed
 * adapter failures keep their code (a provider 429 stays `rate_limited` with its retryAfter),
 * and anything unexpected (a defect, a missing adapter) becomes `provider_unavailable`.
 */
import { Cause, Effect } from "effect"
import type { Schema } from "effect"
import { type NormalizedError, normalized, toNormalized } from "../domain/Errors.ts"
import type { DispatchPlan } from "./ExecutionActor.ts"
import type { AdapterContext, ToolAdapter } from "./providers/Adapter.ts"

export type DispatchOutcome =
  | { readonly _tag: "Success"; readonly output: Schema.Json }
  | { readonly _tag: "Failure"; readonly error: NormalizedError }

export const runAdapter = (
  adapter: ToolAdapter | undefined,
  plan: DispatchPlan,
  context: AdapterContext
): Effect.Effect<DispatchOutcome> => {
  if (adapter === undefined) {
    return Effect.succeed({ _tag: "Failure", error: normalized("provider_unavailable", `No adapter serves ${plan.tool.name}.`) })
  }
  return adapter.run(plan.input, context).pipe(
    Effect.timeoutOption(plan.tool.timeoutMs),
    Effect.map((result): DispatchOutcome =>
      result._tag === "Some"
        ? { _tag: "Success", output: result.value as Schema.Json }
        : { _tag: "Failure", error: normalized("timeout", `${plan.tool.name} did not finish within ${plan.tool.timeoutMs} ms.`) }
    ),
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
