/**
 * The operator's routes (decisions.md section 9), served by the edge beside the API and without
 * a key: `GET /healthz` (the process answers), `GET /readyz` (it should get traffic: store,
 * migrations, projection lag, not stopping; infra/observability/Readiness.ts) and `GET /metrics`
 * (Prometheus text of every metric; the gauges are read from the store first, for
 * infra/observability/Gauges.ts's STORE_WAIT_MS at most, so a store that is down or silent
 * never holds a scrape).
 *
 * Why outside the HttpApi contract: they are for probes and scrapers, not API clients; their
 * answers are not the API's envelopes, and they must answer even when the API's own middleware
 * (keys, rate limits) could not.
 */
import { Context, Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import type { GaugesShape } from "../../infra/observability/Gauges.ts"
import type { ReadinessShape } from "../../infra/observability/Readiness.ts"
import { type EdgeFailure, methodNotAllowed } from "./Envelope.ts"

type Handler = (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, EdgeFailure>

const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"

/** Probes are not cached anywhere on their way. */
const NO_STORE = { "cache-control": "no-store" }

const getOnly = (handle: Effect.Effect<HttpServerResponse.HttpServerResponse>): Handler => (request) =>
  request.method === "GET" || request.method === "HEAD" ? handle : Effect.fail(methodNotAllowed(["GET", "HEAD"]))

export const HEALTH_PATHS = ["/healthz", "/readyz", "/metrics"] as const

export const makeHealthMounts = (readiness: ReadinessShape, gauges: GaugesShape): ReadonlyArray<readonly [string, Handler]> => [
  ["/healthz", getOnly(Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "ok", checks: { process: { status: "ok" } } }, { headers: NO_STORE })))],
  ["/readyz", getOnly(Effect.map(readiness.check, (report) =>
    HttpServerResponse.jsonUnsafe(report, { status: report.status === "ok" ? 200 : 503, headers: NO_STORE })))],
  ["/metrics", getOnly(Effect.map(gauges.refresh, () =>
    // Effect's default registry, which every metric of the service updates (Metrics.ts).
    HttpServerResponse.text(PrometheusMetrics.formatUnsafe(Context.empty()), { contentType: PROMETHEUS_TEXT, headers: NO_STORE })))]
]
