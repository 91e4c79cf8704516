/**
 * Webhook delivery in memory mode, in this process: the receiver's self-signed certificate is
 * added to this process's default trust store (what NODE_EXTRA_CA_CERTS does for a child).
 */
import type { ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { verifyWebhook } from "../../client/Webhooks.ts"
import type { EventStore } from "../../infra/EventStore.ts"
import { appendTerminal } from "../support/Executions.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, KEYS } from "../support/Webhooks.ts"

describe("webhook delivery (memory)", () => {
  let certificate: Certificate
  let receiver: Receiver
  let service: InProcessService
  const original = getCACertificates("default")

  beforeAll(async () => {
    certificate = makeCertificate()
    setDefaultCACertificates([...original, certificate.cert])
    receiver = await startReceiver(certificate)
    service = await startService({
      SERVICE_API_KEYS: KEYS,
      SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,100,100,100,100",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000"
    })
  })
  afterAll(async () => {
    await service.close()
    await receiver.close()
    setDefaultCACertificates(original)
  })

  // The service's runtime provides the event store (AppLive keeps InfraLive's services).
  const append = (outcome: "succeeded" | "failed") =>
    (service.runtime as unknown as ManagedRuntime.ManagedRuntime<EventStore, unknown>).runPromise(appendTerminal("proj_p1", outcome))

  it("delivers in order with a failing head and signs every request", async () => {
    const endpoint = await createEndpoint(service, "p1", receiver.url("/m"))
    let failures = 0
    receiver.respond = () => (failures++ < 2 ? { status: 503 } : { status: 200 })
    const events = [await append("succeeded"), await append("failed"), await append("succeeded")]
    const records = await eventually(async () => {
      const list = await deliveriesOf(service, "p1", endpoint.endpointId)
      return list.length === 3 && list.every((r) => r.status === "succeeded") ? list : undefined
    })
    const ids = receiver.received.map((r) => r.headers["service-webhook-id"])
    expect(ids).toEqual([events[0]!.eventId, events[0]!.eventId, events[0]!.eventId, events[1]!.eventId, events[2]!.eventId])
    for (const request of receiver.received) expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody).ok).toBe(true)
    expect(records.find((r) => r.eventId === events[0]!.eventId)!.attempts.map((a) => a.statusCode)).toEqual([503, 503, 200])
  }, 20_000)
})
