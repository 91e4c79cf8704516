/**
 * The service's metrics (decisions.md section 9), as Effect metrics: `/metrics` renders them as
 * Prometheus text (http/server/Health.ts) and, with OTEL_EXPORTER_OTLP_ENDPOINT, the OTLP
 * exporter sends the same registry (Telemetry.ts). Counters and histograms are updated where
 * things happen (a request at the edge, an execution's outcome, a delivery attempt, an append);
 * gauges (lane depth, projection lag, pool use) are read from the store when scraped
 * (Gauges.ts).
 *
 * Why the per-label metric objects are cached here: an Effect metric with attributes is an
 * object whose registry key is computed once; building one per request would cost a hash of its
 * attributes each time. Label sets are small (routes × statuses, tools × outcomes).
 */
import { Context, Metric } from "effect"

/** Effect's default registry: the one every context shares unless a test provides its own. */
const registry: Context.Context<never> = Context.empty()

/** Seconds: 1 ms to 60 s, for request and attempt latencies. */
const LATENCY_BOUNDARIES = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

type Attributes = Readonly<Record<string, string>>

/** A metric per label set, made on first use. */
const perLabels = <M>(make: (attributes: Attributes) => M) => {
  const made = new Map<string, M>()
  return (key: string, attributes: () => Attributes): M => {
    let metric = made.get(key)
    if (metric === undefined) {
      metric = make(attributes())
      made.set(key, metric)
    }
    return metric
  }
}

const requestCounters = perLabels((attributes) =>
  Metric.counter("http_server_requests_total", { description: "HTTP requests answered, by method, route template and status", attributes, incremental: true })
)
const requestDurations = perLabels((attributes) =>
  Metric.histogram("http_server_request_duration_seconds", {
    description: "Time from a request's arrival at the edge to its answer, by method, route template and status",
    attributes,
    boundaries: LATENCY_BOUNDARIES
  })
)

/** One answered request. `route` is the route's template, never the path (ids, the ingest secret). */
export const recordRequest = (method: string, route: string, status: number, seconds: number): void => {
  const key = `${method} ${route} ${status}`
  const labels = () => ({ method, route, status: String(status) })
  requestCounters(key, labels).updateUnsafe(1, registry)
  requestDurations(key, labels).updateUnsafe(seconds, registry)
}

const executionCounters = perLabels((attributes) =>
  Metric.counter("executions_total", { description: "Executions that reached a terminal status here, by tool and outcome", attributes, incremental: true })
)

/** An execution's terminal record: `outcome` is its status, or its error code when it failed. */
export const recordExecution = (tool: string, outcome: string): void =>
  executionCounters(`${tool} ${outcome}`, () => ({ tool, outcome })).updateUnsafe(1, registry)

const attemptCounters = perLabels((attributes) =>
  Metric.counter("webhook_delivery_attempts_total", { description: "Webhook delivery attempts, by outcome (succeeded, failed)", attributes, incremental: true })
)
const attemptDuration = Metric.histogram("webhook_delivery_attempt_duration_seconds", {
  description: "Duration of webhook delivery attempts",
  boundaries: LATENCY_BOUNDARIES
})
const deliveryCounters = perLabels((attributes) =>
  Metric.counter("webhook_deliveries_total", { description: "Webhook deliveries finished, by outcome (succeeded, failed)", attributes, incremental: true })
)

export const recordAttempt = (succeeded: boolean, seconds: number): void => {
  const outcome = succeeded ? "succeeded" : "failed"
  attemptCounters(outcome, () => ({ outcome })).updateUnsafe(1, registry)
  attemptDuration.updateUnsafe(seconds, registry)
}

export const recordDelivery = (outcome: "succeeded" | "failed"): void =>
  deliveryCounters(outcome, () => ({ outcome })).updateUnsafe(1, registry)

// Served at 0 from the start, as the outcomes are known: a rate() has its series from the first
// scrape, before the first delivery.
for (const outcome of ["succeeded", "failed"]) {
  attemptCounters(outcome, () => ({ outcome })).updateUnsafe(0, registry)
  deliveryCounters(outcome, () => ({ outcome })).updateUnsafe(0, registry)
}

const pollCounters = perLabels((attributes) =>
  Metric.counter("trigger_polls_total", {
    description: "Polls of a provider by this process, by trigger and outcome (listed, not_modified, refused, backoff)",
    attributes,
    incremental: true
  })
)

/** One poll of a polling subscription: what the provider's answer made of it. */
export const recordPoll = (trigger: string, outcome: string): void =>
  pollCounters(`${trigger} ${outcome}`, () => ({ trigger, outcome })).updateUnsafe(1, registry)

const appended = Metric.counter("eventlog_events_appended_total", { description: "Events appended to the log by this process", incremental: true })
// Served at 0 from the start: a process that has appended nothing yet still has the series.
appended.updateUnsafe(0, registry)

/** Appended events in this process since it started, for the append rate. */
let appendedCount = 0

export const recordAppend = (events: number): void => {
  appendedCount += events
  appended.updateUnsafe(events, registry)
}

export const appendedSoFar = (): number => appendedCount

const gauges = perLabels((attributes) => {
  const { name, description, ...rest } = attributes
  return Metric.gauge(name ?? "unnamed", { description, attributes: rest })
})

/** Sets a gauge read at scrape time (Gauges.ts). */
export const setGauge = (name: string, description: string, value: number, labels: Attributes = {}): void => {
  const key = `${name}${JSON.stringify(labels)}`
  gauges(key, () => ({ name, description, ...labels })).updateUnsafe(value, registry)
}
