/**
 * Webhook delivery through a real service process on Postgres and a local HTTPS receiver:
 * signatures, per-endpoint order with a failing head, the retry schedule, give-up, current
 * endpoint state read at each attempt, 3xx and timeouts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../../client/Webhooks.ts"
import { appendTerminal, type Outcome, pgLog } from "../../support/Executions.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"
import { type ChildService, startProcess } from "../../support/Service.ts"
import { createEndpoint, deliveriesOf, type DeliveryRecord, freePort, keyOf, serviceEnv } from "../../support/Webhooks.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../../support/WebhookReceiver.ts"

const finished = (records: ReadonlyArray<DeliveryRecord>, count: number) =>
  records.length === count && records.every((r) => r.status === "succeeded" || r.status === "failed") ? records : undefined

describe.skipIf(!postgresAvailable)("webhook delivery (service process on Postgres)", () => {
  let databaseUrl: string
  let certificate: Certificate
  let service: ChildService
  let log: ReturnType<typeof pgLog>
  let receiver: Receiver
  const append = (project: string, outcome: Outcome) => log.runPromise(appendTerminal(`proj_${project}`, outcome))

  beforeAll(async () => {
    certificate = makeCertificate()
    databaseUrl = await createTestDatabase("whd")
    service = await startProcess(serviceEnv(databaseUrl, certificate), await freePort())
    log = pgLog(databaseUrl)
    receiver = await startReceiver(certificate)
  }, 60_000)

  afterAll(async () => {
    await service?.stop()
    await log?.dispose()
    await receiver?.close()
    if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
  })

  const at = (path: string) => receiver.received.filter((r) => r.path === path)

  it("delivers a signed envelope that the client helper verifies", async () => {
    const endpoint = await createEndpoint(service, "p1", receiver.url("/p1"))
    const recorded = await append("p1", "succeeded")
    const [request] = await eventually(() => (at("/p1").length === 1 ? at("/p1") : undefined), 10_000, "delivery")
    if (request === undefined) throw new Error("no request")
    expect(request.headers["content-type"]).toBe("application/json")
    expect(request.headers["service-webhook-id"]).toBe(recorded.eventId)
    expect(request.headers["service-webhook-signature"]).toMatch(/^v1=[0-9a-f]{64}$/)
    expect(request.headers["service-signature"]).toBe(request.headers["service-webhook-signature"])
    expect(request.headers["service-timestamp"]).toBe(request.headers["service-webhook-timestamp"])
    expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody)).toMatchObject({ ok: true, eventId: recorded.eventId })
    // The compatibility pair alone verifies too; a wrong secret or an altered body does not.
    const compat = { "service-timestamp": request.headers["service-timestamp"]!, "service-signature": request.headers["service-signature"]! }
    expect(verifyWebhook(endpoint.secret, compat, request.rawBody).ok).toBe(true)
    expect(verifyWebhook(`${endpoint.secret}x`, request.headers, request.rawBody).ok).toBe(false)
    expect(verifyWebhook(endpoint.secret, request.headers, `${request.rawBody} `).ok).toBe(false)
    const envelope = JSON.parse(request.rawBody) as Record<string, unknown>
    expect(Object.keys(envelope).toSorted()).toEqual(["createdAt", "data", "id", "projectId", "type"])
    expect(envelope).toMatchObject({ id: recorded.eventId, type: "execution.succeeded", projectId: "proj_p1" })
    expect((envelope.data as { status: string }).status).toBe("succeeded")
    const records = await eventually(async () => finished(await deliveriesOf(service, "p1", endpoint.endpointId), 1))
    expect(records[0]).toMatchObject({ eventId: recorded.eventId, eventType: "execution.succeeded", endpointId: endpoint.endpointId, status: "succeeded" })
    expect(records[0]!.attempts).toEqual([{ attemptedAt: expect.any(String), statusCode: 200 }])
    expect(records[0]!.completedAt).toEqual(expect.any(String))
    expect(records[0]!.nextRetryAt).toBeUndefined()
    expect(Object.keys(records[0]!).toSorted()).toEqual(["attempts", "completedAt", "deliveryId", "endpointId", "eventId", "eventType", "status"])
  }, 30_000)

  it("selects by subscription: exact outcomes and execution.completed", async () => {
    const failedOnly = await createEndpoint(service, "p2", receiver.url("/p2/failed"), ["execution.failed"])
    await createEndpoint(service, "p2", receiver.url("/p2/all"), ["execution.completed"])
    await createEndpoint(service, "p2", receiver.url("/p2/triggers"), ["trigger.*"])
    await append("p2", "succeeded")
    await append("p2", "failed")
    await append("p2", "cancelled")
    await eventually(() => (at("/p2/all").length === 3 && at("/p2/failed").length === 1 ? true : undefined))
    const types = at("/p2/all").map((r) => (JSON.parse(r.rawBody) as { type: string }).type)
    expect(types).toEqual(["execution.succeeded", "execution.failed", "execution.cancelled"])
    expect((JSON.parse(at("/p2/failed")[0]!.rawBody) as { type: string }).type).toBe("execution.failed")
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(at("/p2/triggers")).toEqual([])
    expect(at("/p2/failed")).toHaveLength(1)
    expect(await deliveriesOf(service, "p2", failedOnly.endpointId)).toHaveLength(1)
  }, 30_000)

  it("keeps order per endpoint: a failing head is retried on schedule before later events", async () => {
    const endpoint = await createEndpoint(service, "p3", receiver.url("/p3"))
    let firstId: string | undefined
    receiver.respond = (request) => {
      if (request.path !== "/p3") return { status: 200 }
      firstId ??= request.headers["service-webhook-id"]
      const tries = at("/p3").filter((r) => r.headers["service-webhook-id"] === firstId).length
      return request.headers["service-webhook-id"] === firstId && tries <= 2 ? { status: 500 } : { status: 200 }
    }
    const events = [await append("p3", "succeeded"), await append("p3", "failed"), await append("p3", "succeeded")]
    await eventually(() => (at("/p3").length === 5 ? true : undefined), 15_000, "five requests")
    expect(at("/p3").map((r) => r.headers["service-webhook-id"])).toEqual([
      events[0]!.eventId, events[0]!.eventId, events[0]!.eventId, events[1]!.eventId, events[2]!.eventId
    ])
    const [a, b, c] = at("/p3")
    // Each retry waits 200 ms from the end of the previous attempt.
    expect(b!.at - a!.answeredAt!).toBeGreaterThanOrEqual(190)
    expect(c!.at - b!.answeredAt!).toBeGreaterThanOrEqual(190)
    const records = await eventually(async () => finished(await deliveriesOf(service, "p3", endpoint.endpointId), 3))
    const head = records.find((r) => r.eventId === events[0]!.eventId)!
    expect(head.attempts.map((x) => x.statusCode)).toEqual([500, 500, 200])
    receiver.respond = () => ({ status: 200 })
  }, 30_000)

  it("fails after five attempts, records 3xx without following it", async () => {
    const endpoint = await createEndpoint(service, "p4", receiver.url("/p4"))
    receiver.respond = (request) =>
      request.path === "/p4" ? { status: 302, headers: { location: receiver.url("/p4/elsewhere") } } : { status: 200 }
    const recorded = await append("p4", "failed")
    const records = await eventually(async () => finished(await deliveriesOf(service, "p4", endpoint.endpointId), 1), 15_000)
    expect(records[0]).toMatchObject({ eventId: recorded.eventId, status: "failed" })
    expect(records[0]!.attempts.map((x) => x.statusCode)).toEqual([302, 302, 302, 302, 302])
    expect(records[0]!.completedAt).toEqual(expect.any(String))
    expect(records[0]!.nextRetryAt).toBeUndefined()
    expect(at("/p4")).toHaveLength(5)
    expect(at("/p4/elsewhere")).toHaveLength(0)
    receiver.respond = () => ({ status: 200 })
  }, 30_000)

  it("records a receiver timeout as a sanitized error and retries", async () => {
    const endpoint = await createEndpoint(service, "p5", receiver.url("/p5"))
    receiver.respond = (request) => (request.path === "/p5" && at("/p5").length === 1 ? { status: 200, delayMs: 2_500 } : { status: 200 })
    await append("p5", "succeeded")
    const records = await eventually(async () => finished(await deliveriesOf(service, "p5", endpoint.endpointId), 1), 15_000)
    expect(records[0]!.attempts).toEqual([
      { attemptedAt: expect.any(String), error: "timeout" },
      { attemptedAt: expect.any(String), statusCode: 200 }
    ])
    receiver.respond = () => ({ status: 200 })
  }, 30_000)

  it("reads the current URL and secret at the next attempt", async () => {
    const endpoint = await createEndpoint(service, "p6", receiver.url("/p6/old"))
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    receiver.respond = (request) => (request.path === "/p6/old" ? { status: 500, hold: held } : { status: 200 })
    await append("p6", "succeeded")
    await eventually(() => (at("/p6/old").length === 1 ? true : undefined))
    const rotated = (await (await service.fetch(`/v1/webhooks/${endpoint.endpointId}/rotate-secret`, { method: "POST", key: keyOf("p6") })).json()) as { secret: string }
    const patched = await service.fetch(`/v1/webhooks/${endpoint.endpointId}`, { method: "PATCH", key: keyOf("p6"), json: { url: receiver.url("/p6/new") } })
    expect(patched.status).toBe(200)
    release()
    const [retry] = await eventually(() => (at("/p6/new").length === 1 ? at("/p6/new") : undefined))
    expect(verifyWebhook(rotated.secret, retry!.headers, retry!.rawBody).ok).toBe(true)
    expect(verifyWebhook(endpoint.secret, retry!.headers, retry!.rawBody).ok).toBe(false)
    expect(at("/p6/old")).toHaveLength(1)
    receiver.respond = () => ({ status: 200 })
  }, 30_000)

  it("stops unfinished work when the endpoint is deactivated or deleted", async () => {
    const inactive = await createEndpoint(service, "p7", receiver.url("/p7/inactive"))
    const deleted = await createEndpoint(service, "p7", receiver.url("/p7/deleted"))
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    receiver.respond = (request) => (request.path.startsWith("/p7/") ? { status: 500, hold: held } : { status: 200 })
    await append("p7", "succeeded")
    await append("p7", "succeeded")
    await eventually(() => (at("/p7/inactive").length === 1 && at("/p7/deleted").length === 1 ? true : undefined))
    await service.fetch(`/v1/webhooks/${inactive.endpointId}`, { method: "PATCH", key: keyOf("p7"), json: { active: false } })
    expect((await service.fetch(`/v1/webhooks/${deleted.endpointId}`, { method: "DELETE", key: keyOf("p7") })).status).toBe(204)
    release()
    const records = await eventually(async () => finished(await deliveriesOf(service, "p7", inactive.endpointId), 2), 10_000)
    for (const record of records) {
      expect(record.status).toBe("failed")
      expect(record.completedAt).toBeTypeOf("string")
      expect(record.nextRetryAt).toBeUndefined()
    }
    // No further attempts (interface.md, Webhook delivery: "unfinished | endpoint deactivated or
    // deleted | | no further attempts"): the attempts are the requests made, each with its
    // status code, and nothing is appended for the stop.
    const attempts = records.flatMap((record) => record.attempts)
    expect(attempts).toEqual([{ attemptedAt: expect.any(String), statusCode: 500 }])
    await new Promise((resolve) => setTimeout(resolve, 600))
    expect(at("/p7/inactive")).toHaveLength(1)
    expect(at("/p7/deleted")).toHaveLength(1)
    receiver.respond = () => ({ status: 200 })
  }, 30_000)
})

