/**
 * The operator's view of a running service (decisions.md section 9), in memory and in process:
 * the probes, the Prometheus text, one log line per request (with nothing secret in it), a
 * failed delivery attempt logged at warn, and the JSON line format.
 */
import { Layer, Logger, References } from "effect"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatJsonLine, redactText, toRecord } from "../../infra/observability/Logging.ts"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, KEYS, keyOf } from "../support/Webhooks.ts"

interface Logged {
  readonly level: string
  readonly message: string
  readonly fields: Record<string, unknown>
  readonly line: string
}

const collector = (into: Array<Logged>) =>
  Logger.layer([Logger.make((options) => {
    const record = toRecord(options)
    into.push({ level: record.level, message: record.message, fields: record.fields, line: formatJsonLine(record) })
  })])

describe("operations (memory, in process)", () => {
  const logged: Array<Logged> = []
  let service: InProcessService
  let receiver: Receiver
  const original = getCACertificates("default")

  beforeAll(async () => {
    const certificate = makeCertificate()
    setDefaultCACertificates([...original, certificate.cert])
    receiver = await startReceiver(certificate)
    service = await startService(
      {
        SERVICE_API_KEYS: `${KEYS},test_key_unpinned_0001=proj_test`,
        SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
        SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,100,100,100,100"
      },
      Layer.mergeAll(collector(logged), Layer.succeed(References.MinimumLogLevel, "Info"))
    )
  })
  afterAll(async () => {
    await service.close()
    await receiver.close()
    setDefaultCACertificates(original)
  })

  it("/healthz and /readyz answer {status, checks} without a key; other methods are refused", async () => {
    const health = await service.fetch("/healthz", { key: null })
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: "ok", checks: { process: { status: "ok" } } })
    const ready = await service.fetch("/readyz", { key: null })
    expect(ready.status).toBe(200)
    const body = (await ready.json()) as { status: string; checks: Record<string, { status: string }> }
    expect(body.status).toBe("ok")
    expect(Object.keys(body.checks).toSorted()).toEqual(["lifecycle", "migrations", "projections", "runner", "store"])
    expect(Object.values(body.checks).every((check) => check.status === "ok")).toBe(true)
    expect((await service.fetch("/readyz", { method: "POST", key: null })).status).toBe(405)
  })

  it("/metrics serves Prometheus text: requests by route and status with latency histograms, executions and deliveries by outcome, lane gauges", async () => {
    const endpoint = await createEndpoint(service, "p1", receiver.url("/ok"))
    await service.fetch("/v1/me")
    await service.fetch("/v1/executions/exe_missing")
    const ok = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { a: 1 } } })
    expect(ok.status).toBe(200)
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.fail", userId: "u1", input: { code: "provider_error" } } })
    await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).filter((d) => d.status === "succeeded").length === 2)

    const response = await service.fetch("/metrics", { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/plain")
    const text = await response.text()
    expect(text).toMatch(/http_server_requests_total\{method="GET",route="\/v1\/me",status="200"\} [1-9]/)
    // The route is the template, never the path with its id.
    expect(text).toMatch(/http_server_requests_total\{method="GET",route="\/v1\/executions\/:executionId",status="404"\} [1-9]/)
    expect(text).not.toContain("exe_missing")
    expect(text).toMatch(/http_server_request_duration_seconds_bucket\{method="GET",route="\/v1\/me",status="200",le="0.005"\}/)
    expect(text).toMatch(/http_server_request_duration_seconds_count\{method="POST",route="\/v1\/execute",status="200"\} [1-9]/)
    expect(text).toMatch(/executions_total\{tool="demo.echo",outcome="succeeded"\} [1-9]/)
    expect(text).toMatch(/executions_total\{tool="demo.fail",outcome="provider_error"\} [1-9]/)
    expect(text).toMatch(/webhook_deliveries_total\{outcome="succeeded"\} [1-9]/)
    expect(text).toMatch(/webhook_delivery_attempts_total\{outcome="succeeded"\} [1-9]/)
    for (const gauge of ["webhook_lane_depth", "webhook_lane_oldest_pending_seconds", "projection_lag_events", "eventlog_events_appended_total", "nodejs_heap_used_bytes"]) {
      expect(text).toContain(`# TYPE ${gauge} `)
    }
    // The memory store always answers.
    expect(text).toMatch(/^store_up 1$/m)
  })

  it("/metrics counts an execution's outcome once: not again for an idempotent replay or a repeated cancel", async () => {
    const count = async (tool: string, outcome: string) => {
      const text = await (await service.fetch("/metrics", { key: null })).text()
      const line = text.split("\n").find((l) => l.startsWith(`executions_total{tool="${tool}",outcome="${outcome}"}`))
      return line === undefined ? 0 : Number(line.split(" ").at(-1))
    }
    const echoes = await count("demo.echo", "succeeded")
    const execute = { tool: "demo.echo", userId: "u1", input: { counted: 1 }, idempotencyKey: "metrics-once" }
    for (const round of [1, 2, 3]) {
      const response = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: execute })
      expect(response.status).toBe(200)
      expect(((await response.json()) as { replayed?: true }).replayed).toBe(round === 1 ? undefined : true)
    }
    expect(await count("demo.echo", "succeeded")).toBe(echoes + 1)

    const cancels = await count("demo.sleep", "cancelled")
    const started = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.sleep", userId: "u1", mode: "async", input: { ms: 60_000 } } })
    const { executionId } = (await started.json()) as { executionId: string }
    for (const _ of [1, 2, 3]) {
      const cancelled = await service.fetch(`/v1/executions/${executionId}/cancel`, { method: "POST", key: keyOf("p1") })
      expect(cancelled.status).toBe(200)
    }
    expect(await count("demo.sleep", "cancelled")).toBe(cancels + 1)
  })

  // A scrape within a second of the start used to leave the append rate out (it is a rate over
  // the time since the previous scrape, and there had been none).
  it("/metrics lists every gauge from the first scrape on, the append rate 0 before any interval", async () => {
    const fresh = await startService()
    try {
      const text = await (await fresh.fetch("/metrics", { key: null })).text()
      for (const gauge of ["eventlog_appends_per_second", "webhook_lane_depth", "projection_lag_events", "nodejs_heap_used_bytes", "store_up"]) {
        expect(text, gauge).toContain(`# TYPE ${gauge} gauge`)
      }
      expect(text).toMatch(/^eventlog_appends_per_second 0$/m)
    } finally {
      await fresh.close()
    }
  })

  it("one line per request at info: method, route template, status, duration, request id; no credential, no ingest secret", async () => {
    logged.length = 0
    const me = await service.fetch("/v1/me", { headers: { "x-probe": "1" } })
    const requestId = me.headers.get("request-id")
    const ingest = await service.fetch("/v1/ingest/sub_0123456789/very-secret-path-value-42", { method: "POST", key: null, json: {} })
    expect(ingest.status).toBe(404)
    await eventually(() => logged.filter((entry) => entry.message === "request").length >= 2)
    const lines = logged.filter((entry) => entry.message === "request")
    const meLine = lines.find((entry) => entry.fields.requestId === requestId)
    expect(meLine?.level).toBe("info")
    expect(meLine?.fields).toMatchObject({ method: "GET", route: "/v1/me", status: 200 })
    expect(typeof meLine?.fields.durationMs).toBe("number")
    const ingestLine = lines.find((entry) => entry.fields.route === "/v1/ingest/:subscriptionId/:secret")
    expect(ingestLine?.fields).toMatchObject({ method: "POST", status: 404 })
    for (const entry of logged) {
      expect(entry.line).not.toContain("very-secret-path-value-42")
      expect(entry.line).not.toContain(KEY)
    }
  })

  it("a failed delivery attempt is logged at warn with its endpoint, delivery, sanitized error and next retry", async () => {
    receiver.respond = (request) => ({ status: request.path === "/failing" ? 503 : 200 })
    const endpoint = await createEndpoint(service, "p2", receiver.url("/failing"))
    logged.length = 0
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: {} } })
    const warning = await eventually(() => logged.find((entry) => entry.message === "webhook delivery attempt failed"))
    expect(warning.level).toBe("warn")
    expect(warning.fields).toMatchObject({ projectId: "proj_p2", endpointId: endpoint.endpointId, attempt: 1, error: "status 503" })
    expect(String(warning.fields.deliveryId)).toMatch(/^whd_/)
    expect(Date.parse(String(warning.fields.nextRetryAt))).toBeGreaterThan(0)
    expect(warning.line).not.toContain(endpoint.secret)
  })

  // The fifth attempt's line said `"nextRetryAt":"none (given up)"`, no time (outside audit).
  it("the last failed attempt's line says it was given up, with no nextRetryAt", async () => {
    receiver.respond = (request) => ({ status: request.path === "/given-up" ? 503 : 200 })
    const endpoint = await createEndpoint(service, "p2", receiver.url("/given-up"))
    logged.length = 0
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: {} } })
    const last = await eventually(() =>
      logged.find((entry) => entry.message === "webhook delivery attempt failed" && entry.fields.endpointId === endpoint.endpointId && entry.fields.attempt === 5)
    )
    expect(last.fields.givenUp).toBe(true)
    expect(last.fields).not.toHaveProperty("nextRetryAt")
  })

  // A delivery that fails without an attempt (its endpoint deactivated, a trigger payload lost)
  // left no line at all (outside audit).
  it("deliveries stopped by their endpoint's deactivation are logged, with the endpoint, the count and the reason", async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    receiver.respond = (request) => (request.path === "/stopped" ? { status: 200, hold: held } : { status: 200 })
    const endpoint = await createEndpoint(service, "p2", receiver.url("/stopped"))
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: {} } })
    await eventually(() => receiver.received.find((request) => request.path === "/stopped"))
    await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: {} } })
    logged.length = 0
    const failedBefore = await failedDeliveries()
    expect((await service.fetch(`/v1/webhooks/${endpoint.endpointId}`, { method: "PATCH", key: keyOf("p2"), json: { active: false } })).status).toBe(200)
    release()
    const line = await eventually(() => logged.find((entry) => entry.message === "webhook deliveries stopped" && entry.fields.endpointId === endpoint.endpointId))
    expect(line.level).toBe("warn")
    // Outside audit: with no project named, a flood of these lines could not be told apart by tenant.
    expect(line.fields).toMatchObject({ projectId: "proj_p2", reason: "endpoint_inactive" })
    expect(Number(line.fields.deliveries)).toBeGreaterThanOrEqual(1)
    // Outside audit: a delivery stopped so ends failed, and /metrics counted only those that used
    // up their attempts among the failed deliveries.
    expect(await failedDeliveries()).toBe(failedBefore + Number(line.fields.deliveries))
  })

  /** `webhook_deliveries_total{outcome="failed"}` as /metrics says it now. */
  const failedDeliveries = async () => {
    const text = await (await service.fetch("/metrics", { key: null })).text()
    const line = text.split("\n").find((l) => l.startsWith(`webhook_deliveries_total{outcome="failed"}`))
    return line === undefined ? 0 : Number(line.split(" ").at(-1))
  }
})

describe("log lines", () => {
  it("redact credentials a message may quote: URL passwords, ingest secrets, keys, signing secrets, bearer tokens", () => {
    const text = redactText(
      "postgres://svc:hunter2@db:5432/x /v1/ingest/trgsub_1/s3cr3t sk_abcdefghijklmnop whsec_abcdefghijkl Bearer tok123"
    )
    for (const secret of ["hunter2", "s3cr3t", "efghijklmnop", "efghijkl", "tok123"]) expect(text).not.toContain(secret)
    expect(text).toContain("/v1/ingest/trgsub_1/[redacted]")
    // The route template is kept as the metrics name it; a secret that merely starts like it is not.
    expect(redactText("route=/v1/ingest/:subscriptionId/:secret")).toBe("route=/v1/ingest/:subscriptionId/:secret")
    expect(redactText("/v1/ingest/trgsub_1/:secretX1")).toBe("/v1/ingest/trgsub_1/[redacted]")
  })
})
