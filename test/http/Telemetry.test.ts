/**
 * OTLP export (decisions.md section 9): with OTEL_EXPORTER_OTLP_ENDPOINT set, a real service
 * process sends traces, metrics and logs to it: a span per request (named by method, with the
 * route template), per execution and per delivery attempt. The receiver is a small HTTP server
 * in the test that records OTLP/HTTP posts (JSON here; protobuf is the default on the wire).
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, KEYS, keyOf } from "../support/Webhooks.ts"

interface Posted {
  readonly path: string
  readonly contentType: string | undefined
  readonly body: string
}

interface OtlpSpan {
  readonly name: string
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
  readonly status?: { readonly code?: number; readonly message?: string }
}

/** OTLP's status code of a span that failed. */
const STATUS_ERROR = 2

const resourcesOf = (posted: ReadonlyArray<Posted>): ReadonlyArray<OtlpSpan> =>
  posted.filter((p) => p.path === "/v1/traces").flatMap((p) =>
    (JSON.parse(p.body) as { resourceSpans: ReadonlyArray<{ resource: OtlpSpan }> }).resourceSpans.map((r) => ({ ...r.resource, name: "resource" }))
  )

const startOtlpReceiver = async () => {
  const posted: Array<Posted> = []
  const server: Server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      posted.push({ path: request.url ?? "", contentType: request.headers["content-type"], body: Buffer.concat(chunks).toString("utf8") })
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { posted, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const spansOf = (posted: ReadonlyArray<Posted>): ReadonlyArray<OtlpSpan> =>
  posted.filter((p) => p.path === "/v1/traces").flatMap((p) => {
    const body = JSON.parse(p.body) as { resourceSpans: ReadonlyArray<{ scopeSpans: ReadonlyArray<{ spans: ReadonlyArray<OtlpSpan> }> }> }
    return body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))
  })

const attribute = (span: OtlpSpan, key: string): unknown => {
  const found = span.attributes?.find((a) => a.key === key)?.value
  return found === undefined ? undefined : Object.values(found)[0]
}

describe("OTLP export (a real service process)", () => {
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>> | undefined
  let receiver: Receiver | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
    await otlp?.close()
  })

  it("sends spans per request, execution and delivery attempt, the metrics, and the logs; no secret of a path", async () => {
    otlp = await startOtlpReceiver()
    const certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    service = await startProcess({
      SERVICE_API_KEYS: KEYS,
      NODE_EXTRA_CA_CERTS: certificate.certPath,
      SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "service-under-test",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_METRIC_EXPORT_INTERVAL: "300",
      OTEL_BLRP_SCHEDULE_DELAY: "200"
    }, await freePort())
    // Outside audit: spans of failed attempts and failed tool runs were all OK, with no status.
    receiver.respond = (request) => ({ status: request.path === "/otlp-failing" ? 503 : 200 })
    await createEndpoint(service, "p1", receiver.url("/otlp"))
    await createEndpoint(service, "p1", receiver.url("/otlp-failing"))
    expect((await service.fetch("/v1/me", { key: keyOf("p1") })).status).toBe(200)
    const executed = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { traced: true } } })
    expect(executed.status).toBe(200)
    const failed = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.fail", userId: "u1", input: { code: "provider_unavailable" } } })
    expect(failed.status).toBe(200)
    expect((await service.fetch("/v1/ingest/sub_0123456789/path-secret-never-exported", { method: "POST", key: null, json: {} })).status).toBe(404)
    await eventually(() => receiver!.received.length >= 1, 10_000, "the delivery")

    const spans = await eventually(() => {
      const all = spansOf(otlp!.posted)
      // Both events to the endpoint that answers, the first to the one that refuses (the second
      // waits behind its retry, 30 s later).
      return all.filter((s) => s.name === "webhook.delivery_attempt").length >= 3 && all.filter((s) => s.name === "execution").length >= 2 &&
          all.some((s) => attribute(s, "http.route") === "/v1/ingest/:subscriptionId/:secret")
        ? all
        : undefined
    }, 15_000, "the spans")
    const me = spans.find((s) => s.name === "HTTP GET" && attribute(s, "http.route") === "/v1/me")
    expect(me).toBeDefined()
    expect(attribute(me!, "http.response.status_code")).toBe(200)
    const execution = spans.find((s) => s.name === "execution")
    expect(attribute(execution!, "execution.tool")).toBe("demo.echo")
    const attempt = spans.find((s) => s.name === "webhook.delivery_attempt")
    expect(String(attribute(attempt!, "webhook.delivery_id"))).toMatch(/^whd_/)
    const attempts = spans.filter((s) => s.name === "webhook.delivery_attempt")
    const refused = attempts.filter((s) => attribute(s, "http.response.status_code") === 503)
    const taken = attempts.filter((s) => attribute(s, "http.response.status_code") === 200)
    expect(refused.length).toBeGreaterThanOrEqual(1)
    expect(taken.length).toBeGreaterThanOrEqual(2)
    for (const span of refused) {
      expect(span.status?.code).toBe(STATUS_ERROR)
      expect(attribute(span, "webhook.outcome")).toBe("failed")
      expect(attribute(span, "error.type")).toBe("503")
    }
    for (const span of taken) {
      expect(span.status?.code).not.toBe(STATUS_ERROR)
      expect(attribute(span, "webhook.outcome")).toBe("succeeded")
    }
    const runs = spans.filter((s) => s.name === "execution")
    const failedRun = runs.find((s) => attribute(s, "execution.tool") === "demo.fail")
    expect(failedRun?.status?.code).toBe(STATUS_ERROR)
    expect(attribute(failedRun!, "error.type")).toBe("provider_unavailable")
    const echoRun = runs.find((s) => attribute(s, "execution.tool") === "demo.echo")
    expect(echoRun?.status?.code).not.toBe(STATUS_ERROR)
    expect(attribute(echoRun!, "execution.outcome")).toBe("succeeded")
    // Each process tells itself apart from its peers: several would otherwise export one series.
    const [resource] = resourcesOf(otlp.posted)
    expect(String(attribute(resource!, "service.instance.id"))).toMatch(/^.+:\d+$/)
    expect(attribute(resource!, "process.pid")).toBe(service.process.pid)

    await eventually(() => otlp!.posted.some((p) => p.path === "/v1/metrics" && p.body.includes("http_server_requests_total")), 15_000, "the metrics")
    await eventually(() => otlp!.posted.some((p) => p.path === "/v1/logs" && p.body.includes("request")), 15_000, "the logs")
    // Outside audit: a line's fields were one formatted string in the record's body, so a backend
    // could not filter on them. They are attributes; the body is the message.
    const records = otlp.posted.filter((p) => p.path === "/v1/logs").flatMap((p) =>
      (JSON.parse(p.body) as { resourceLogs: ReadonlyArray<{ scopeLogs: ReadonlyArray<{ logRecords: ReadonlyArray<OtlpSpan & { body?: unknown }> }> }> })
        .resourceLogs.flatMap((r) => r.scopeLogs.flatMap((s) => s.logRecords))
    )
    const meLine = records.find((record) => attribute({ ...record, name: "" }, "route") === "/v1/me")
    expect(meLine?.body).toEqual({ stringValue: "request" })
    expect(attribute({ ...meLine!, name: "" }, "status")).toBe(200)
    expect(attribute({ ...meLine!, name: "" }, "method")).toBe("GET")
    expect(otlp.posted.some((p) => p.body.includes("service-under-test"))).toBe(true)
    for (const post of otlp.posted) expect(post.body).not.toContain("path-secret-never-exported")
  }, 60_000)
})

// Outside audit: stdout redacted what a line quoted, but the OTLP exporter took the raw log
// records (`sk_…` in an ingest path sent in full) and span events (an error message quoting the
// request's value) past that step.
describe("OTLP export of what a request quotes", () => {
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>> | undefined
  let service: ChildService | undefined
  afterAll(async () => {
    await service?.stop()
    await otlp?.close()
  })

  it("passes logs and spans through the redaction of stdout, in either protocol", async () => {
    otlp = await startOtlpReceiver()
    const canaries = ["sk_R3gC20cZNMr5tlAXdK9FiNpAXvx5K2DpAmiqSwlE", "whsec_t_B8Sn8gtI6hIB5oBwU8mL4LtfQYX4OWM4ky0MRjcgA", "SECRETCANARYbearer", "SECRETCANARYurlpw"]
    for (const protocol of ["http/json", "http/protobuf"]) {
      otlp.posted.length = 0
      service = await startProcess({
        SERVICE_API_KEYS: KEYS,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRIC_EXPORT_INTERVAL: "100",
        OTEL_BLRP_SCHEDULE_DELAY: "100"
      }, await freePort(), ["--log-level", "debug"])
      for (const path of [`/v1/ingest/${canaries[0]}/x`, `/v1/ingest/${canaries[1]}/x`, "/v1/ingest/Bearer%20SECRETCANARYbearer/x", "/v1/ingest/https:%2F%2Fu:SECRETCANARYurlpw@h/x"]) {
        expect((await service.fetch(path, { method: "POST", key: null, json: {} })).status).toBe(404)
      }
      for (const toolkit of [canaries[0], canaries[1]]) {
        const created = await service.fetch("/v1/connections", { method: "POST", key: keyOf("p1"), json: { toolkit, userId: "u1", authClass: "bearer", credentials: { token: "t" } } })
        expect(created.status).toBe(422)
      }
      await eventually(() => otlp!.posted.some((p) => p.path === "/v1/logs" && p.body.includes("/v1/ingest/")), 10_000, "the logs")
      await eventually(() => otlp!.posted.some((p) => p.path === "/v1/traces" && p.body.includes("/v1/connections")), 10_000, "the spans")
      await service.stop()
      service = undefined
      expect(otlp.posted.some((p) => p.body.includes("[redacted]"))).toBe(true)
      for (const post of otlp.posted) for (const canary of canaries) expect(post.body).not.toContain(canary)
    }
  }, 60_000)
})

// Outside audit: with the collector away, nothing was logged at any level: an operator could not
// tell that telemetry was being dropped.
describe("OTLP export that fails", () => {
  let service: ChildService | undefined
  let collector: Server | undefined
  afterAll(async () => {
    await service?.stop()
    await new Promise<void>((resolve) => (collector === undefined ? resolve() : collector.close(() => resolve())))
  })

  it("says so once at warn while the collector refuses, and once at info when it takes exports again", async () => {
    let refusing = true
    collector = createServer((request, response) => {
      request.resume()
      request.on("end", () => response.writeHead(refusing ? 503 : 200, { "content-type": "application/json" }).end("{}"))
    })
    await new Promise<void>((resolve) => collector!.listen(0, "127.0.0.1", resolve))
    const url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
    service = await startProcess({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer otlp-secret-4711",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_METRIC_EXPORT_INTERVAL: "100",
      OTEL_BLRP_SCHEDULE_DELAY: "100"
    }, await freePort())
    const lines = (text: string) => service!.output().split("\n").filter((line) => line.includes(text))
    await eventually(async () => lines("telemetry export").length > 0, 10_000, "a line about the failed export")
    // More export rounds fail meanwhile; still one line.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(lines("telemetry export")).toHaveLength(1)
    expect(lines("telemetry export")[0]).toMatch(/"level":"warn".*telemetry export to http:\/\/127\.0\.0\.1:\d+ failed \(HTTP 503\)/)
    refusing = false
    await eventually(async () => lines("telemetry export works again").length === 1, 90_000, "the recovery line")
    expect(service.output()).not.toContain("otlp-secret-4711")
  }, 120_000)
})
