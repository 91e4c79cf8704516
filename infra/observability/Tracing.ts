/**
 * Spans for the units an operator follows (decisions.md section 9): a request (http/server/
 * RequestLog.ts), an execution's tool run and a webhook delivery attempt. They are made only
 * when traces leave the process (OTEL_EXPORTER_OTLP_ENDPOINT, Telemetry.ts): Effect's native
 * tracer keeps spans nobody reads, and an execution's hot path should not pay for them.
 *
 * A unit whose outcome is a value (a failed attempt, a failed tool run: neither is an Effect
 * failure) tells its span what happened: attributes, and an error status when it failed, so a
 * trace backend shows the failures `/metrics` counts (outside audit: every such span was OK).
 */
import { Effect, Tracer } from "effect"

/** True when the current tracer exports its spans. */
export const exporting = (tracer: Tracer.Tracer): boolean => tracer !== Tracer.nativeTracer

/** What a unit's result says of it: attributes for its span, and `error` (a message) when it failed. */
export interface SpanOutcome {
  readonly attributes: Readonly<Record<string, unknown>>
  readonly error?: string | undefined
}

/** Ends the span with an error status; caught just outside it, where the value goes on. */
class FailedOutcome<A> extends Error {
  readonly value: A
  constructor(value: A, message: string) {
    super(message)
    this.name = "Failed"
    this.value = value
  }
}

/**
 * `effect` in a span named `name`, when spans are exported; as it is otherwise. `outcome` judges
 * its result: the span carries the attributes, and fails (status error, the message as its
 * exception) when the result is a failure.
 */
export const spanned = <A>(
  name: string,
  attributes: Readonly<Record<string, unknown>>,
  kind: Tracer.SpanKind = "internal",
  outcome?: (value: A) => SpanOutcome
) =>
<E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    if (!exporting(fiber.getRef(Tracer.Tracer))) return effect
    if (outcome === undefined) return Effect.withSpan(effect, name, { attributes, kind })
    const judged = Effect.flatMap(effect, (value): Effect.Effect<A, E | FailedOutcome<A>> => {
      const said = outcome(value)
      return Effect.andThen(
        Effect.annotateCurrentSpan(said.attributes),
        said.error === undefined ? Effect.succeed(value) : Effect.fail(new FailedOutcome(value, said.error))
      )
    })
    return Effect.withSpan(judged, name, { attributes, kind }).pipe(
      Effect.catchIf((error): error is FailedOutcome<A> => error instanceof FailedOutcome, (failed) => Effect.succeed(failed.value))
    ) as Effect.Effect<A, E, R>
  })
