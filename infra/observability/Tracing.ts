/**
 * Spans for the units an operator follows (decisions.md section 9): a request (http/server/
 * RequestLog.ts), an execution's tool run and a webhook delivery attempt. They are made only
 * when traces leave the process (OTEL_EXPORTER_OTLP_ENDPOINT, Telemetry.ts): Effect's native
 * tracer keeps spans nobody reads, and an execution's hot path should not pay for them.
 */
import { Effect, Tracer } from "effect"

/** True when the current tracer exports its spans. */
export const exporting = (tracer: Tracer.Tracer): boolean => tracer !== Tracer.nativeTracer

/** `effect` in a span named `name`, when spans are exported; as it is otherwise. */
export const spanned = (name: string, attributes: Readonly<Record<string, unknown>>, kind: Tracer.SpanKind = "internal") =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) =>
    exporting(fiber.getRef(Tracer.Tracer)) ? Effect.withSpan(effect, name, { attributes, kind }) : effect
  )
