/**
 * Memory mode stays bounded (SERVICE_MEMORY_RETENTION_MS): finished executions and deliveries
 * older than the window are dropped with their streams, the log's head is trimmed, and what is
 * still running stays however old it is. The window here is a second.
 */
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, startService } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, KEYS, keyOf } from "../support/Webhooks.ts"

const gauge = (text: string, name: string, labels = ""): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `) || (labels === "" && l.startsWith(`${name} `)))
  return line === undefined ? Number.NaN : Number(line.split(" ").at(-1))
}

describe("memory retention (in process)", () => {
  let service: InProcessService
  let receiver: Receiver
  const original = getCACertificates("default")

  beforeAll(async () => {
    const certificate = makeCertificate()
    setDefaultCACertificates([...original, certificate.cert])
    receiver = await startReceiver(certificate)
    service = await startService({
      SERVICE_API_KEYS: KEYS,
      SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      SERVICE_MEMORY_RETENTION_MS: "1000"
    })
  })
  afterAll(async () => {
    await service.close()
    await receiver.close()
    setDefaultCACertificates(original)
  })

  it("drops finished executions and deliveries older than the window; keeps a running one", async () => {
    const key = keyOf("p1")
    const endpoint = await createEndpoint(service, "p1", receiver.url("/retained"))
    const running = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.sleep", userId: "u1", input: { ms: 4_000 }, mode: "async" } })
    const runningId = ((await running.json()) as { executionId: string }).executionId
    const finished: Array<string> = []
    for (let i = 0; i < 20; i++) {
      const response = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { i } } })
      finished.push(((await response.json()) as { executionId: string }).executionId)
    }
    await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).filter((d) => d.status === "succeeded").length === 20)

    await eventually(async () => {
      for (const executionId of finished) if ((await service.fetch(`/v1/executions/${executionId}`, { key })).status !== 404) return undefined
      return (await deliveriesOf(service, "p1", endpoint.endpointId)).length === 0
    }, 10_000, "the finished executions and their deliveries to go")
    // Still running, older than the window: kept.
    const stillThere = await service.fetch(`/v1/executions/${runningId}`, { key })
    expect(stillThere.status).toBe(200)
    expect(((await stillThere.json()) as { status: string }).status).toBe("running")

    const metrics = await (await service.fetch("/metrics", { key: null })).text()
    expect(gauge(metrics, "memory_retained_rows", '{table="executions"}')).toBeLessThanOrEqual(1)
    expect(gauge(metrics, "memory_retained_rows", '{table="webhook_deliveries"}')).toBe(0)
    // The log keeps what is younger than the window only (the endpoint's stream is still readable).
    expect(gauge(metrics, "memory_retained_events")).toBeLessThan(10)

    // The service goes on as before: the endpoint still gets deliveries.
    const after = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { after: true } } })
    expect(after.status).toBe(200)
    await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).some((d) => d.status === "succeeded"))
  }, 30_000)

  // decisions.md section 3 keys a replay for 24 hours, but a window shorter than that drops the
  // execution a key names: the key is then as good as expired, and runs anew (it was a 404).
  it("runs a key anew once the window dropped the execution it named", async () => {
    const key = keyOf("p1")
    const body = { tool: "demo.echo", userId: "u1", input: { a: 1 }, idempotencyKey: "retained-key" }
    const first = await service.fetch("/v1/execute", { method: "POST", key, json: body })
    const { executionId } = (await first.json()) as { executionId: string }
    const replay = await service.fetch("/v1/execute", { method: "POST", key, json: body })
    expect(((await replay.json()) as { executionId: string; replayed?: boolean })).toMatchObject({ executionId, replayed: true })
    await eventually(async () => (await service.fetch(`/v1/executions/${executionId}`, { key })).status === 404, 10_000, "the execution to go")
    const again = await service.fetch("/v1/execute", { method: "POST", key, json: body })
    expect(again.status).toBe(200)
    const fresh = (await again.json()) as { executionId: string; replayed?: boolean; status: string }
    expect(fresh.executionId).not.toBe(executionId)
    expect(fresh.status).toBe("succeeded")
    expect(fresh.replayed).toBeUndefined()
    // From then on the key names the new execution.
    const replayOfFresh = await service.fetch("/v1/execute", { method: "POST", key, json: body })
    expect(((await replayOfFresh.json()) as { executionId: string })).toMatchObject({ executionId: fresh.executionId, replayed: true })
  }, 30_000)
})
