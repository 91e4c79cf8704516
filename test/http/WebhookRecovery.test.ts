/**
 * Resend and recover (decisions.md section 9), in memory through a real port and an HTTPS
 * receiver: a resend is a new delivery of the same event (same eventId) at the lane's tail; recover
 * queues again the failed deliveries since a time; refusals (404, 403, 422).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import { appendTerminal } from "../support/Executions.ts"
import type { InProcessService } from "../support/Service.ts"
import { createTriggerEndpoint, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { deliveriesOf, keyOf, KEYS, startMemoryWebhookService } from "../support/Webhooks.ts"

const KEY = keyOf("p1")
const PINNED = "pinned_key_recovery_0001"

describe("webhook resend and recover", () => {
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void>
  const append = () => service.runtime.runPromise(appendTerminal("proj_p1", "succeeded"))
  const idOf = (r: { headers: Readonly<Record<string, string>> }) => r.headers["service-webhook-id"]

  beforeAll(async () => {
    const started = await startMemoryWebhookService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "10000", SERVICE_API_KEYS: `${KEYS},${PINNED}=proj_p1/user_1` })
    service = started.service
    receiver = started.receiver
    close = started.close
  })
  afterAll(async () => close())

  it("resend: 202, a new delivery of the same event, after everything already queued", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/resend"), { key: KEY, events: ["execution.completed"] })
    const first = await append()
    const delivered = await eventually(async () => {
      const records = await deliveriesOf(service, "p1", endpoint.endpointId)
      return records[0]?.status === "succeeded" ? records[0] : undefined
    }, 10_000, "the first delivery")
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    receiver.respond = (request) => (request.path === "/resend" && idOf(request) !== first.eventId ? { status: 200, hold: held } : { status: 200 })
    const second = await append()
    const third = await append()
    await eventually(() => receiver.received.find((r) => idOf(r) === second.eventId), 10_000, "the second event in flight")
    const response = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${delivered.deliveryId}/resend`, { method: "POST", key: KEY })
    expect(response.status).toBe(202)
    const resent = (await response.json()) as { deliveryId: string; eventId: string; eventType: string; status: string; attempts: Array<unknown> }
    expect(resent).toEqual({ deliveryId: expect.stringMatching(/^whd_/), eventId: first.eventId, eventType: "execution.succeeded", endpointId: endpoint.endpointId, status: "pending", attempts: [] })
    expect(resent.deliveryId).not.toBe(delivered.deliveryId)
    release()
    await eventually(() => (receiver.received.filter((r) => r.path === "/resend").length >= 4 ? true : undefined), 10_000, "all four requests")
    const order = receiver.received.filter((r) => r.path === "/resend").map(idOf)
    expect(order).toEqual([first.eventId, second.eventId, third.eventId, first.eventId])
    const last = receiver.received.filter((r) => r.path === "/resend").at(-1)!
    expect(verifyWebhook(endpoint.secret, last.headers, last.rawBody).ok).toBe(true)
    const records = await eventually(async () => {
      const found = await deliveriesOf(service, "p1", endpoint.endpointId)
      return found.length === 4 && found.every((r) => r.status === "succeeded") ? found : undefined
    }, 10_000, "four succeeded records")
    expect(records.filter((r) => r.eventId === first.eventId)).toHaveLength(2)
    receiver.respond = () => ({ status: 200 })
  })

  it("resend of a trigger event while its payload is here", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/resend-trigger"), { key: KEY })
    const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] }, KEY)
    await postIngest(service, ingestPath(subscription), { type: "event_callback", event_id: "EvResend", event_time: 1_700_000_000, event: { type: "ping" } })
    const delivered = await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).find((r) => r.status === "succeeded"), 10_000, "the delivery")
    const response = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${delivered.deliveryId}/resend`, { method: "POST", key: KEY })
    expect(response.status).toBe(202)
    await eventually(() => (receiver.received.filter((r) => r.path === "/resend-trigger").length === 2 ? true : undefined), 10_000, "the resend")
    const [a, b] = receiver.received.filter((r) => r.path === "/resend-trigger")
    expect(b?.rawBody).toBe(a?.rawBody)
  })

  it("recover: the failed deliveries since a time are queued again; {count}", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/recover"), { key: KEY, events: ["execution.completed"] })
    const since = new Date().toISOString()
    receiver.respond = (request) => (request.path === "/recover" ? { status: 500 } : { status: 200 })
    const events = [await append(), await append(), await append()]
    await eventually(async () => {
      const records = await deliveriesOf(service, "p1", endpoint.endpointId)
      return records.length === 3 && records.every((r) => r.status === "failed") ? true : undefined
    }, 20_000, "three failed deliveries")
    receiver.respond = () => ({ status: 200 })
    const none = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since: new Date(Date.now() + 60_000).toISOString() } })
    expect(await none.json()).toEqual({ count: 0 })
    const recovered = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
    expect(recovered.status).toBe(202)
    expect(await recovered.json()).toEqual({ count: 3 })
    const records = await eventually(async () => {
      const found = await deliveriesOf(service, "p1", endpoint.endpointId)
      return found.filter((r) => r.status === "succeeded").length === 3 ? found : undefined
    }, 10_000, "three recovered deliveries")
    expect(records.filter((r) => r.status === "succeeded").map((r) => r.eventId).toSorted()).toEqual(events.map((e) => e.eventId).toSorted())
    const succeeded = receiver.received.filter((r) => r.path === "/recover").slice(-3).map(idOf)
    expect(succeeded).toEqual(events.map((e) => e.eventId))
    // Their events have reached the endpoint since: recovering again sends nothing twice.
    const again = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
    expect(await again.json()).toEqual({ count: 0 })
  }, 30_000)

  it("an inactive endpoint refuses resend and recover with 409 rather than queueing deliveries that fail at once", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/inactive"), { key: KEY, events: ["execution.completed"] })
    const since = new Date().toISOString()
    receiver.respond = (request) => (request.path === "/inactive" ? { status: 500 } : { status: 200 })
    await append()
    const failed = await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).find((r) => r.status === "failed"), 20_000, "a failed delivery")
    receiver.respond = () => ({ status: 200 })
    expect((await service.fetch(`/v1/webhooks/${endpoint.endpointId}`, { method: "PATCH", key: KEY, json: { active: false } })).status).toBe(200)
    const resend = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${failed.deliveryId}/resend`, { method: "POST", key: KEY })
    const recover = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
    for (const response of [resend, recover]) {
      expect(response.status).toBe(409)
      const body = (await response.json()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe("invalid_input")
      expect(body.error.message).toContain("inactive")
    }
    expect(await deliveriesOf(service, "p1", endpoint.endpointId)).toHaveLength(1)
    // Active again, it recovers.
    expect((await service.fetch(`/v1/webhooks/${endpoint.endpointId}`, { method: "PATCH", key: KEY, json: { active: true } })).status).toBe(200)
    const again = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
    expect(await again.json()).toEqual({ count: 1 })
  }, 30_000)

  it("recover skips an event the endpoint has had since (a resend) or is still being sent, and counts each event once", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/recover-once"), { key: KEY, events: ["execution.completed"] })
    const since = new Date().toISOString()
    receiver.respond = (request) => (request.path === "/recover-once" ? { status: 500 } : { status: 200 })
    const [first, second] = [await append(), await append()]
    const failed = await eventually(async () => {
      const records = await deliveriesOf(service, "p1", endpoint.endpointId)
      return records.length === 2 && records.every((r) => r.status === "failed") ? records : undefined
    }, 20_000, "two failed deliveries")
    // The first event is resent and fails again: two failed deliveries of one event.
    const resentFailing = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${failed.find((r) => r.eventId === first.eventId)!.deliveryId}/resend`, { method: "POST", key: KEY })
    expect(resentFailing.status).toBe(202)
    await eventually(async () => {
      const records = await deliveriesOf(service, "p1", endpoint.endpointId)
      return records.length === 3 && records.every((r) => r.status === "failed") ? true : undefined
    }, 20_000, "three failed deliveries")
    // The second is resent with the receiver fixed: delivered.
    receiver.respond = () => ({ status: 200 })
    const resent = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${failed.find((r) => r.eventId === second.eventId)!.deliveryId}/resend`, { method: "POST", key: KEY })
    expect(resent.status).toBe(202)
    await eventually(async () => (await deliveriesOf(service, "p1", endpoint.endpointId)).find((r) => r.eventId === second.eventId && r.status === "succeeded"), 10_000, "the resend delivered")
    const before = receiver.received.filter((r) => r.path === "/recover-once").length
    const recovered = await service.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
    expect(await recovered.json()).toEqual({ count: 1 })
    await eventually(() => (receiver.received.filter((r) => r.path === "/recover-once").length > before ? true : undefined), 10_000, "the recovered event")
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(receiver.received.filter((r) => r.path === "/recover-once").slice(before).map(idOf)).toEqual([first.eventId])
  }, 40_000)

  it("refuses unknown or foreign deliveries and endpoints (404), pinned keys (403) and a bad since (422)", async () => {
    const endpoint = await createTriggerEndpoint(service, receiver.url("/refusals"), { key: KEY, events: ["execution.completed"] })
    const other = await createTriggerEndpoint(service, receiver.url("/refusals-other"), { key: KEY, events: ["execution.completed"] })
    await append()
    const delivery = await eventually(async () => (await deliveriesOf(service, "p1", other.endpointId))[0], 10_000, "a delivery")
    const status = async (path: string, key: string, json?: unknown) => (await service.fetch(path, { method: "POST", key, ...(json === undefined ? {} : { json }) })).status
    expect(await status(`/v1/webhooks/${endpoint.endpointId}/deliveries/${delivery.deliveryId}/resend`, KEY)).toBe(404)
    expect(await status(`/v1/webhooks/${endpoint.endpointId}/deliveries/whd_nope/resend`, KEY)).toBe(404)
    expect(await status(`/v1/webhooks/${other.endpointId}/deliveries/${delivery.deliveryId}/resend`, keyOf("p2"))).toBe(404)
    expect(await status(`/v1/webhooks/whe_nope/recover`, KEY, { since: new Date().toISOString() })).toBe(404)
    expect(await status(`/v1/webhooks/${other.endpointId}/deliveries/${delivery.deliveryId}/resend`, PINNED)).toBe(403)
    expect(await status(`/v1/webhooks/${other.endpointId}/recover`, PINNED, { since: new Date().toISOString() })).toBe(403)
    expect(await status(`/v1/webhooks/${other.endpointId}/recover`, KEY, { since: "yesterday" })).toBe(422)
    // The shape of a time, but no real instant: a month 13, an hour 25, a second 60, 30 February.
    for (const since of ["2026-13-45T99:99:99Z", "2026-01-01T25:00:00Z", "2026-00-01T00:00:00Z", "2026-01-01T00:00:60Z", "2026-01-01T00:00:00+99:99", "2026-02-30T00:00:00Z"]) {
      const answer = await service.fetch(`/v1/webhooks/${other.endpointId}/recover`, { method: "POST", key: KEY, json: { since } })
      expect([since, answer.status, ((await answer.json()) as { error: { code: string } }).error.code]).toEqual([since, 422, "invalid_input"])
    }
    expect(await status(`/v1/webhooks/${other.endpointId}/recover`, KEY, {})).toBe(422)
    expect(await status(`/v1/webhooks/${other.endpointId}/recover`, KEY, { since: new Date().toISOString(), extra: 1 })).toBe(422)
  })
})
