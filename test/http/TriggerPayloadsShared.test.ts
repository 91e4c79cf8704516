/**
 * Trigger payloads live in one cache per process, shared by every project (decisions.md section
 * 5: never written to Postgres). The defect this guards against, found by an outside audit: one
 * project posting many large events to its own ingest URL pushed another project's payload out
 * of the cache while that project's delivery waited for a retry, and the delivery then failed
 * with `payload_unavailable` though nothing had restarted. The flood now evicts its own payloads.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { InProcessService } from "../support/Service.ts"
import { createTriggerEndpoint, history, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { deliveriesOf, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

const QUIET = "p1"
const FLOOD = "p2"
// Forty of these pass both bounds: the lanes' envelope cache (32 Mi characters) and the payloads'.
const TEXT = "x".repeat(1_000_000)

const callback = (eventId: string) => ({ type: "event_callback", event_id: eventId, event_time: Math.floor(Date.now() / 1000), event: { type: "big", text: TEXT } })

describe("trigger payloads shared by projects", () => {
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void>
  let quietFails = true

  beforeAll(async () => {
    const started = await startMemoryWebhookService({
      // Room for about six of these payloads; the flood sends forty.
      SERVICE_TRIGGER_PAYLOAD_CACHE_BYTES: String(6 * 2_001_000),
      // The quiet project's second attempt comes after the flood.
      SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,3000,100,100,100",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
      // The flood must reach the cache: the ingest budget (IngestBudget.test.ts) is off here.
      SERVICE_INGEST_BYTES_PER_MINUTE: "0"
    })
    service = started.service
    receiver = started.receiver
    // The flood's endpoint fails too, so its deliveries queue and hold their envelopes in memory.
    receiver.respond = (request) => ({ status: request.path === "/flood" || quietFails ? 500 : 200 })
    close = started.close
  })
  afterAll(async () => close())

  it("a project flooding its ingest URL does not cost another project's delivery its payload", async () => {
    const quietEndpoint = await createTriggerEndpoint(service, receiver.url("/quiet"), { key: keyOf(QUIET) })
    const quiet = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [quietEndpoint.endpointId] }, keyOf(QUIET))
    expect((await postIngest(service, ingestPath(quiet), callback("Ev_quiet"))).status).toBe(202)
    await eventually(() => receiver.received.find((request) => request.path === "/quiet"), 10_000, "the quiet project's first attempt")

    const floodEndpoint = await createTriggerEndpoint(service, receiver.url("/flood"), { key: keyOf(FLOOD) })
    const flood = await subscribe(service, { trigger: "demo.event", userId: "u2", webhookEndpointIds: [floodEndpoint.endpointId] }, keyOf(FLOOD))
    for (let i = 0; i < 40; i++) expect((await postIngest(service, ingestPath(flood), callback(`Ev_flood_${i}`))).status).toBe(202)
    quietFails = false

    const [delivery] = await eventually(async () => {
      const deliveries = await deliveriesOf(service, QUIET, quietEndpoint.endpointId)
      return deliveries[0]?.completedAt === undefined ? undefined : deliveries
    }, 15_000, "the quiet project's delivery to finish")
    expect(delivery?.status).toBe("succeeded")
    expect(delivery?.attempts.map((attempt) => attempt.statusCode ?? attempt.error)).toEqual([500, 200])
    const [row] = await history(service, `?subscriptionId=${quiet.subscriptionId}`, keyOf(QUIET))
    expect(row?.deliveryStatus).toBe("succeeded")
  })
})
