/**
 * One line per request (decisions.md section 9) and the request metrics, written by the edge
 * when it has the answer: method, route template, status, duration and request id. The route is
 * the template the edge matched (`/v1/executions/:executionId`, `/v1/ingest/:subscriptionId/:secret`),
 * never the path: paths carry ids, and the ingest path carries its secret. Nothing of the
 * headers is written, so no credential reaches the log.
 *
 * With an exporting tracer (OTEL_EXPORTER_OTLP_ENDPOINT), each request is also a server span,
 * named and attributed the same way (Effect's own HTTP span is turned off in Server.ts: it
 * records the full URL). Without one no span is made at all.
 */
import { Cause, Clock, Effect, type Exit, LogLevel, Option, References, Tracer } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpTraceContext } from "effect/http"
import { recordRequest } from "../../infra/observability/Metrics.ts"
import { exporting } from "../../infra/observability/Tracing.ts"

/** The route of a request that matched none. */
export const UNMATCHED = "(unmatched)"

/** What the edge learns about a request as it answers it. */
export interface RequestTrace {
  readonly requestId: string
  readonly method: string
  readonly startedNs: bigint
  route: string
}

/** Requests being answered, for a stop that waits for them (Drain.ts). */
export interface InFlight {
  count: number
  /** Every request ever started: a stop waits until no new one arrives for a moment. */
  started: number
}

/** A client that went away before its answer: logged with nginx's 499. */
const CLIENT_CLOSED = 499

const finish = (trace: RequestTrace, status: number, clock: Clock.Clock, log: boolean): Effect.Effect<void> => {
  const durationMs = Number(clock.currentTimeNanosUnsafe() - trace.startedNs) / 1e6
  recordRequest(trace.method, trace.route, status, durationMs / 1000)
  if (!log) return Effect.void
  return Effect.logInfo("request", {
    method: trace.method,
    route: trace.route,
    status,
    durationMs: Math.round(durationMs * 1000) / 1000,
    requestId: trace.requestId
  })
}

const statusOf = <A extends { readonly status: number }, E>(exit: Exit.Exit<A, E>): number =>
  exit._tag === "Success" ? exit.value.status : Cause.hasInterruptsOnly(exit.cause) ? CLIENT_CLOSED : 500

/**
 * Runs `answer` for `request` with its line, its metrics and (when traces are exported) its
 * span. `answer` fills in the route as it finds it; `inFlight` counts it while it runs.
 */
export const logged = <A extends { readonly status: number }, E, R>(
  request: HttpServerRequest.HttpServerRequest,
  requestId: string,
  inFlight: InFlight,
  answer: (trace: RequestTrace) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) => {
    const clock = fiber.getRef(Clock.Clock)
    const trace: RequestTrace = { requestId, method: request.method, startedNs: clock.currentTimeNanosUnsafe(), route: UNMATCHED }
    // The line's fields are not even built when info lines are off.
    const log = LogLevel.isLessThanOrEqualTo(fiber.getRef(References.MinimumLogLevel), "Info")
    inFlight.count++
    inFlight.started++
    const run = Effect.onExit(answer(trace), (exit) => {
      inFlight.count--
      return finish(trace, statusOf(exit), clock, log)
    })
    if (!exporting(fiber.getRef(Tracer.Tracer))) return run
    return Effect.useSpan(
      `HTTP ${request.method}`,
      { kind: "server", parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)) },
      (span) =>
        run.pipe(Effect.tap((response) =>
          Effect.sync(() => {
            span.attribute("http.request.method", trace.method)
            span.attribute("http.route", trace.route)
            span.attribute("http.response.status_code", response.status)
            span.attribute("request.id", trace.requestId)
          })
        ), Effect.withParentSpan(span))
    )
  })
