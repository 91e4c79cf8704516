/**
 * OTLP export of traces, metrics and logs (decisions.md section 9) through `effect/observability`,
 * on when OTEL_EXPORTER_OTLP_ENDPOINT is set. The standard OpenTelemetry variables apply where
 * they mean something here: OTEL_EXPORTER_OTLP_PROTOCOL (`http/protobuf`, the default, or
 * `http/json`), OTEL_EXPORTER_OTLP_HEADERS (`key=value,…`), OTEL_SERVICE_NAME (default
 * `service`), OTEL_SDK_DISABLED, and the export intervals OTEL_BSP_SCHEDULE_DELAY (traces, 5 s),
 * OTEL_METRIC_EXPORT_INTERVAL (metrics, 10 s) and OTEL_BLRP_SCHEDULE_DELAY (logs, 1 s).
 *
 * Why not `Otlp.layerFromConfig`: it also requires OTEL_<SIGNAL>_EXPORTER=otlp for each signal,
 * where the decision is that the endpoint alone turns export on.
 *
 * The layer wraps the whole service (src/main.ts), so spans and logs of every layer are
 * exported and the exporters flush last when the process stops.
 */
import { Effect, Layer } from "effect"
import { hostname } from "node:os"
import { FetchHttpClient, HttpClient } from "effect/http"
import { Otlp, OtlpExporter, OtlpSerialization } from "effect/observability"
import { boolean, httpUrl, integer, oneOf, parsed, raw, Rejected } from "../Settings.ts"
import { flattenLogs } from "./LogRecordFields.ts"
import { redactDeep } from "./Logging.ts"

/**
 * OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs, comma separated, values percent-encoded. They
 * carry a collector's API key, so a refusal names a pair by its place and never quotes it.
 */
const otlpHeaders = parsed("OTEL_EXPORTER_OTLP_HEADERS", (value) => {
  const headers: Record<string, string> = {}
  const pairs = (value ?? "").split(",").map((item) => item.trim()).filter((item) => item !== "")
  for (const [index, pair] of pairs.entries()) {
    const eq = pair.indexOf("=")
    const name = pair.slice(0, eq).trim()
    if (eq <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      return new Rejected(`expected key=value pairs, comma separated; pair ${index + 1} has no header name before "="`)
    }
    try {
      headers[name] = decodeURIComponent(pair.slice(eq + 1).trim())
    } catch {
      return new Rejected(`the value of ${name} is not valid percent-encoding`)
    }
  }
  return headers
})

/**
 * The resource attributes that tell this process from its peers, unless OTEL_RESOURCE_ATTRIBUTES
 * names them (which Effect's exporter reads itself, but explicit attributes would override):
 * `service.instance.id` (`<host>:<pid>`, as `runners` rows and rotation lines name a process),
 * `host.name` and `process.pid`. Without them several processes export identical series, which a
 * backend merges or reads as counter resets (outside audit).
 */
const instanceAttributes = (configured: string): Record<string, string | number> => {
  const named = new Set(configured.split(",").map((pair) => pair.split("=", 1)[0]?.trim() ?? ""))
  const defaults: Record<string, string | number> = {
    "service.instance.id": `${hostname()}:${process.pid}`,
    "host.name": hostname(),
    "process.pid": process.pid
  }
  return Object.fromEntries(Object.entries(defaults).filter(([key]) => !named.has(key)))
}

export const telemetrySettings = Effect.gen(function*() {
  const endpoint = yield* httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", "")
  const disabled = yield* boolean("OTEL_SDK_DISABLED", false)
  return {
    endpoint: endpoint === "" || disabled ? undefined : endpoint,
    protocol: yield* oneOf("OTEL_EXPORTER_OTLP_PROTOCOL", ["http/protobuf", "http/json"], "http/protobuf"),
    headers: yield* otlpHeaders,
    serviceName: (yield* raw("OTEL_SERVICE_NAME")) ?? "service",
    instance: instanceAttributes((yield* raw("OTEL_RESOURCE_ATTRIBUTES")) ?? ""),
    tracesEveryMs: yield* integer("OTEL_BSP_SCHEDULE_DELAY", 5_000, 10, 600_000),
    metricsEveryMs: yield* integer("OTEL_METRIC_EXPORT_INTERVAL", 10_000, 10, 600_000),
    logsEveryMs: yield* integer("OTEL_BLRP_SCHEDULE_DELAY", 1_000, 10, 600_000)
  }
})

/**
 * The exporters' HTTP client, saying when exports start failing (warn) and when they go through
 * again (info), once each: the exporters themselves only log at debug, and drop what they could
 * not send, so an operator would not know telemetry is lost. The line names the endpoint and
 * the HTTP status or the client's reason, never the headers (they carry the collector's key).
 * Its own export may fail too: it changes nothing, the state is already "failing".
 */
const reportingClient = (endpoint: string) =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) => {
      let failing = false
      const failed = (why: string) =>
        failing ? Effect.void : Effect.suspend(() => {
          failing = true
          return Effect.logWarning(`telemetry export to ${endpoint} failed (${why}); what cannot be sent is dropped, and export is tried again`)
        })
      const succeeded = Effect.suspend(() => {
        if (!failing) return Effect.void
        failing = false
        return Effect.logInfo(`telemetry export works again (${endpoint})`)
      })
      return client.pipe(
        HttpClient.tap((response) => (response.status >= 200 && response.status < 300 ? succeeded : failed(`HTTP ${response.status}`))),
        HttpClient.tapError((error) => failed(error.reason._tag))
      )
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * The serialization of every export, behind the redaction of the log lines (Logging.ts): the
 * exporters take the raw log records and spans (a message, an annotation, an error's message
 * quoting a request's value), so this is the one step all of them pass before they leave.
 */
const redacting = (serialization: Layer.Layer<OtlpSerialization.OtlpSerialization>) =>
  Layer.effect(
    OtlpSerialization.OtlpSerialization,
    Effect.map(OtlpSerialization.OtlpSerialization, (inner) =>
      OtlpSerialization.OtlpSerialization.of({
        traces: (data) => inner.traces(redactDeep(data)),
        metrics: (data) => inner.metrics(redactDeep(data)),
        // Fields become attributes first, so that those named like secrets are replaced whole.
        logs: (data) => inner.logs(redactDeep(flattenLogs(data)))
      }))
  ).pipe(Layer.provide(serialization))

/** True when telemetry leaves the process; Gauges.ts then refreshes the gauges by itself. */
export const exportEnabled = Effect.map(telemetrySettings, (settings) => settings.endpoint !== undefined)

/** The OTLP exporters, or nothing without an endpoint. A bad value is reported by the preflight. */
export const layer: Layer.Layer<OtlpExporter.Flusher> = Layer.unwrap(
  telemetrySettings.pipe(
    Effect.map((settings): Layer.Layer<OtlpExporter.Flusher> => {
      if (settings.endpoint === undefined) return OtlpExporter.layerFlusher
      return Otlp.layer({
        baseUrl: settings.endpoint,
        resource: { serviceName: settings.serviceName, serviceVersion: "0.1.0", attributes: settings.instance },
        headers: settings.headers,
        loggerMergeWithExisting: true,
        tracerExportInterval: settings.tracesEveryMs,
        metricsExportInterval: settings.metricsEveryMs,
        loggerExportInterval: settings.logsEveryMs,
        shutdownTimeout: 3_000
      }).pipe(
        Layer.provide(redacting(settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf)),
        Layer.provide(reportingClient(settings.endpoint))
      )
    }),
    Effect.orElseSucceed(() => OtlpExporter.layerFlusher)
  )
)
