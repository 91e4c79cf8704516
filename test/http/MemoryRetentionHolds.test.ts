/**
 * What the memory window must not drop (SERVICE_MEMORY_RETENTION_MS; decisions.md section 1:
 * "executions, deliveries and history older than this are dropped"), found by an outside soak:
 * - an execution whose webhook is still waiting its turn: its delivery must still be sent (at
 *   least once, interface.md), not stopped `source_unavailable` once the envelope cache let it go;
 * - an execution that ran longer than the window: it stays for the window after it finished;
 * - trigger history: dropped with its deliveries at the window, never left behind showing
 *   a delivered event as `failed`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ENVELOPE_CACHE_CHARS } from "../../infra/webhooks/DeliveryAttempt.ts"
import { KEY, type InProcessService } from "../support/Service.ts"
import { createTriggerEndpoint, history, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, KEYS, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

const WINDOW_MS = 1_500

/** Deliveries stopped without success, as /metrics counts them (abandoned ones included). */
const failedDeliveries = (metrics: string): number =>
  Number(metrics.split("\n").find((line) => line.startsWith('webhook_deliveries_total{outcome="failed"}'))?.split(" ").at(-1) ?? 0)

describe("memory retention keeps what is still wanted (in process)", () => {
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void>
  /** Whether `/down` answers 500; the indexes of the requests it answered 200. */
  let down = false
  const answeredOk = new Set<number>()

  beforeAll(async () => {
    ;({ service, receiver, close } = await startMemoryWebhookService({
      SERVICE_API_KEYS: `${KEYS},${KEY}=proj_triggers`,
      SERVICE_MEMORY_RETENTION_MS: String(WINDOW_MS),
      SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,3000,3000,3000,3000",
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "1000",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000"
    }))
    receiver.respond = (request, index) => {
      if (request.path !== "/down") return { status: 200 }
      if (!down) answeredOk.add(index)
      return { status: down ? 500 : 200 }
    }
  })
  afterAll(() => close())

  it("sends every webhook that waited its turn past the window, though the envelope cache let it go", async () => {
    const key = keyOf("p2")
    const endpoint = await createEndpoint(service, "p2", receiver.url("/down"), ["execution.succeeded"])
    // The first delivery fails until the receiver is up again, holding the lane (one at a time):
    // those queued behind it wait past the window, and their envelopes (the record with its
    // output, about 0.9 MB each) outgrow the cache.
    const failedBefore = failedDeliveries(await (await service.fetch("/metrics", { key: null })).text())
    down = true
    const input = { text: "x".repeat(900_000) }
    const count = Math.ceil((ENVELOPE_CACHE_CHARS * 1.5) / 900_000)
    const executionIds: Array<string> = []
    for (let i = 0; i < count; i++) {
      const response = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input } })
      expect(response.status).toBe(200)
      executionIds.push(((await response.json()) as { executionId: string }).executionId)
    }
    // Past the window, a delivery waiting its turn can still be resent: its execution is kept.
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS + 500))
    const waiting = (await deliveriesOf(service, "p2", endpoint.endpointId)).filter((d) => d.attempts.length === 0).at(-1)
    expect(waiting).toBeDefined()
    const resent = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${waiting?.deliveryId}/resend`, { method: "POST", key })
    expect(resent.status).toBe(202)
    down = false
    // Finished deliveries go with the window, so what was sent is read at the receiver, each
    // body parsed once (the receiver shares this process's loop with the service).
    const sent = new Set<string>()
    let read = 0
    const delivered = () => {
      for (; read < receiver.received.length; read++) {
        const request = receiver.received[read]!
        if (answeredOk.has(read)) sent.add((JSON.parse(request.rawBody) as { data: { executionId: string } }).data.executionId)
      }
      return sent
    }
    await eventually(() => (executionIds.every((id) => delivered().has(id)) ? true : undefined), 60_000, "every execution's webhook to be sent").catch(() => undefined)
    expect(executionIds.filter((id) => !delivered().has(id))).toEqual([])
    expect(failedDeliveries(await (await service.fetch("/metrics", { key: null })).text()) - failedBefore).toBe(0)
    // A delivery counts from when it finished: the last ones, queued long before, are still
    // listed with their outcome half a window after (they went at the next sweep).
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS / 2))
    const listed = await deliveriesOf(service, "p2", endpoint.endpointId)
    expect(listed.length).toBeGreaterThan(0)
    expect(listed.every((d) => d.status === "succeeded")).toBe(true)
  }, 90_000)

  it("does not keep one endpoint's finished delivery for another endpoint's open one of the same execution", async () => {
    const key = keyOf("p3")
    const fine = await createEndpoint(service, "p3", receiver.url("/fine"), ["execution.succeeded"])
    await createEndpoint(service, "p3", receiver.url("/never"), ["execution.succeeded"])
    const previous = receiver.respond
    receiver.respond = (request, index) => (request.path === "/never" ? { status: 500 } : previous(request, index))
    try {
      const response = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { a: 1 } } })
      expect(response.status).toBe(200)
      await eventually(async () => ((await deliveriesOf(service, "p3", fine.endpointId))[0]?.status === "succeeded" ? true : undefined), 10_000, "the fine delivery")
      // Its own window passes while the other endpoint's delivery is still retrying: it goes.
      await eventually(async () => ((await deliveriesOf(service, "p3", fine.endpointId)).length === 0 ? true : undefined), WINDOW_MS * 4, "the finished delivery to go")
    } finally {
      receiver.respond = previous
    }
  }, 30_000)

  it("keeps an execution that ran longer than the window for the window after it finished", async () => {
    const key = keyOf("p1")
    const started = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.sleep", userId: "u1", input: { ms: WINDOW_MS + 500 }, mode: "async" } })
    const { executionId } = (await started.json()) as { executionId: string }
    await eventually(async () => {
      const response = await service.fetch(`/v1/executions/${executionId}`, { key })
      return ((await response.json()) as { status: string }).status === "succeeded" ? true : undefined
    }, 10_000, "the sleep to finish")
    // Half a window after it finished: still there (it went at the next sweep, created more than
    // a window before).
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS / 2))
    expect((await service.fetch(`/v1/executions/${executionId}`, { key })).status).toBe(200)
    await eventually(async () => ((await service.fetch(`/v1/executions/${executionId}`, { key })).status === 404 ? true : undefined), 10_000, "the execution to go")
  }, 30_000)

  it("drops a trigger event's history row with its delivery, never showing the delivered event as failed", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/trigger"))
    const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] })
    const accepted = await postIngest(service, ingestPath(subscription), {
      type: "event_callback", event_id: "Ev-retained", event_time: Math.floor(Date.now() / 1000), event: { type: "ping" }
    })
    expect(accepted.status).toBe(202)
    await eventually(async () => ((await history(service))[0]?.deliveryStatus === "succeeded" ? true : undefined), 10_000, "the event to be delivered")
    const seen = new Set<string>()
    await eventually(async () => {
      const rows = (await history(service)).filter((row) => row.subscriptionId === subscription.subscriptionId)
      for (const row of rows) seen.add(`${row.deliveryStatus}:${row.deliveryTargets.map((t) => t.status).join(",")}`)
      return rows.length === 0 ? true : undefined
    }, 10_000, "the history row to go with the window")
    expect([...seen]).toEqual(["succeeded:succeeded"])
  }, 30_000)
})
