/**
 * Webhook delivery in memory mode, in this process (see `startMemoryWebhookService`).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../../client/Webhooks.ts"
import { appendTerminal } from "../../support/Executions.ts"
import type { InProcessService } from "../../support/Service.ts"
import { eventually, type Receiver } from "../../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, startMemoryWebhookService } from "../../support/Webhooks.ts"

describe("webhook delivery (memory)", () => {
  let receiver: Receiver
  let service: InProcessService
  let close: () => Promise<void>

  beforeAll(async () => {
    ;({ service, receiver, close } = await startMemoryWebhookService({
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000"
    }))
  })
  afterAll(() => close())

  // The service's runtime provides the event store (AppLive keeps InfraLive's services).
  const append = (outcome: "succeeded" | "failed") =>
    service.runtime.runPromise(appendTerminal("proj_p1", outcome))

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

  it("pages delivery history newest first with cursors bound to the endpoint", async () => {
    const endpoint = await createEndpoint(service, "p2", receiver.url("/m2"))
    const other = await createEndpoint(service, "p2", receiver.url("/m2/other"), ["execution.failed"])
    receiver.respond = () => ({ status: 200 })
    const events = []
    for (let i = 0; i < 5; i++) {
      events.push(await service.runtime.runPromise(appendTerminal("proj_p2", "succeeded")))
    }
    await eventually(async () => {
      const list = await deliveriesOf(service, "p2", endpoint.endpointId)
      return list.length === 5 && list.every((r) => r.status === "succeeded") ? true : undefined
    })
    const seen: Array<string> = []
    let cursor: string | undefined
    let pages = 0
    do {
      const response = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: keyOf("p2") })
      expect(response.status).toBe(200)
      const body = (await response.json()) as { deliveries: Array<{ eventId: string }>; nextCursor?: string }
      seen.push(...body.deliveries.map((d) => d.eventId))
      cursor = body.nextCursor
      pages++
      if (cursor !== undefined) {
        // A cursor of one endpoint's history is refused on another's.
        const foreign = await service.fetch(`/v1/webhooks/${other.endpointId}/deliveries?cursor=${cursor}`, { key: keyOf("p2") })
        expect(foreign.status).toBe(422)
      }
    } while (cursor !== undefined)
    expect(pages).toBe(3)
    expect(seen).toEqual(events.map((e) => e.eventId).toReversed())
    const unknown = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries?status=failed`, { key: keyOf("p2") })
    expect(unknown.status).toBe(422)
  }, 20_000)

  it("subscriptions follow endpoints created, patched and deactivated after the project's events were dispatched", async () => {
    const run = (outcome: "succeeded" | "failed") =>
      service.runtime.runPromise(appendTerminal("proj_p3", outcome))
    receiver.respond = () => ({ status: 200 })
    const seen = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.headers["service-webhook-id"])
    // The dispatcher has seen this project with no endpoint at all.
    await run("succeeded")
    const first = await createEndpoint(service, "p3", receiver.url("/p3/a"))
    const afterCreate = await run("succeeded")
    await eventually(() => seen("/p3/a").includes(afterCreate.eventId) || undefined, 3_000, "delivery to the new endpoint")
    // Only failures from now on.
    const patched = await service.fetch(`/v1/webhooks/${first.endpointId}`, {
      key: keyOf("p3"),
      method: "PATCH",
      body: JSON.stringify({ events: ["execution.failed"] }),
      headers: { "content-type": "application/json" }
    })
    expect(patched.status).toBe(200)
    const skipped = await run("succeeded")
    const failed = await run("failed")
    await eventually(() => seen("/p3/a").includes(failed.eventId) || undefined, 3_000, "delivery after the patch")
    expect(seen("/p3/a")).not.toContain(skipped.eventId)
    const deactivated = await service.fetch(`/v1/webhooks/${first.endpointId}`, {
      key: keyOf("p3"),
      method: "PATCH",
      body: JSON.stringify({ active: false }),
      headers: { "content-type": "application/json" }
    })
    expect(deactivated.status).toBe(200)
    const second = await createEndpoint(service, "p3", receiver.url("/p3/b"))
    const last = await run("failed")
    await eventually(() => seen("/p3/b").includes(last.eventId) || undefined, 3_000, "delivery to the second endpoint")
    expect(seen("/p3/a")).not.toContain(last.eventId)
    const queued = await deliveriesOf(service, "p3", first.endpointId)
    expect(queued.map((d) => d.eventId)).not.toContain(last.eventId)
    expect(second.endpointId).not.toBe(first.endpointId)
  }, 30_000)
})
