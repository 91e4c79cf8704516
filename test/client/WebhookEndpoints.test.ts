/**
 * The client's webhook methods against the real service in this process, with an HTTPS receiver
 * whose self-signed certificate this process trusts: endpoints are created, paged, patched,
 * rotated and deleted through the client, and the deliveries they get are verified with the
 * `verifyWebhook` the client's entry exports.
 */
import { Effect } from "effect"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, makeServiceClient, verifyWebhook } from "../../client/index.ts"
import { type InProcessService, KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { rejection } from "./Rejection.ts"

// A public literal address: create-time checks need no DNS, and nothing is ever sent to it.
const URL_OK = "https://93.184.215.14/hooks"

describe("client webhooks against the service", () => {
  let service: InProcessService
  let receiver: Receiver
  const originalCAs = getCACertificates("default")
  beforeAll(async () => {
    const certificate = makeCertificate()
    setDefaultCACertificates([...originalCAs, certificate.cert])
    receiver = await startReceiver(certificate)
    service = await startService({
      SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,100,100,100,100",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "1000",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "6000"
    })
  })
  afterAll(async () => {
    await service.close()
    await receiver.close()
    setDefaultCACertificates(originalCAs)
  })

  it("create, list with limit and cursor, get, update, rotateSecret, delete", async () => {
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
    const first = await client.webhooks.create({ url: URL_OK, events: ["execution.completed"] })
    expect(first).toMatchObject({ url: URL_OK, events: ["execution.completed"], active: true })
    expect(first.endpointId).toMatch(/^whe_/)
    expect(first.secret).toMatch(/^whsec_/)
    expect(first.secretPrefix).toBe(first.secret.slice(0, 10))
    const second = await client.webhooks.create({ url: "HTTPS://93.184.215.14:443/Other#frag", events: ["trigger.*"], active: false })
    expect(second).toMatchObject({ url: "https://93.184.215.14/Other", active: false })

    const { secret: _secret, ...firstPublic } = first
    expect(await client.webhooks.get(first.endpointId)).toEqual(firstPublic)
    const page = await client.webhooks.list({ limit: 1 })
    expect(page.webhooks).toHaveLength(1)
    expect(page.nextCursor).toBeDefined()
    const all = await client.webhooks.list()
    expect(all.nextCursor).toBeUndefined()
    const ids = all.webhooks.map((w) => w.endpointId)
    expect(ids).toEqual(expect.arrayContaining([first.endpointId, second.endpointId]))
    const next = await client.webhooks.list({ limit: 1, cursor: page.nextCursor })
    expect(next.webhooks[0]?.endpointId).toBe(ids[1])
    expect(JSON.stringify(all)).not.toContain(first.secret)
    expect(JSON.stringify(all)).not.toContain(second.secret)

    const updated = await client.webhooks.update(second.endpointId, { active: true, events: ["execution.failed"] })
    expect(updated).toMatchObject({ endpointId: second.endpointId, active: true, events: ["execution.failed"], url: second.url })
    // The Effect client: the same route, the same answer shape.
    const viaEffect = await Effect.runPromise(
      makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY }).webhooks.update(second.endpointId, { url: URL_OK })
    )
    expect(viaEffect).toMatchObject({ url: URL_OK, active: true })

    const rotated = await client.webhooks.rotateSecret(first.endpointId)
    expect(rotated.endpointId).toBe(first.endpointId)
    expect(rotated.secret).toMatch(/^whsec_/)
    expect(rotated.secret).not.toBe(first.secret)
    expect(rotated.secretPrefix).toBe(rotated.secret.slice(0, 10))
    expect((await client.webhooks.get(first.endpointId)).secretPrefix).toBe(rotated.secretPrefix)

    await client.webhooks.delete(second.endpointId)
    expect(await rejection(client.webhooks.get(second.endpointId))).toMatchObject({ status: 404, code: "not_found" })
    expect(await rejection(client.webhooks.delete(second.endpointId))).toMatchObject({ status: 404, code: "not_found" })
    await client.webhooks.delete(first.endpointId)
  })

  it("listDeliveries: real deliveries, paged, each verified with verifyWebhook", async () => {
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY, userId: "hook_user" })
    const endpoint = await client.webhooks.create({ url: receiver.url("/client"), events: ["execution.completed"] })
    const before = receiver.received.length
    const run = await client.executions.execute({ tool: "demo.echo", input: { n: 1 } })
    const delivered = await eventually(() => receiver.received[before], 10_000, "the first delivery")
    const verified = verifyWebhook(endpoint.secret, delivered.headers, delivered.rawBody)
    expect(verified.ok).toBe(true)
    const envelope = JSON.parse(delivered.rawBody) as { id: string; type: string; data: { executionId: string } }
    expect(envelope).toMatchObject({ type: "execution.succeeded", data: { executionId: run.executionId } })
    if (verified.ok) expect(verified.eventId).toBe(envelope.id)

    const record = await eventually(async () => {
      const page = await client.webhooks.listDeliveries(endpoint.endpointId)
      return page.deliveries.find((d) => d.status === "succeeded")
    }, 10_000, "a succeeded delivery record")
    expect(record).toMatchObject({ eventId: envelope.id, eventType: "execution.succeeded", endpointId: endpoint.endpointId })
    expect(record.attempts[0]).toMatchObject({ statusCode: 200 })
    expect(JSON.stringify(record)).not.toContain(run.executionId)

    // After a rotation the next delivery verifies with the new secret only.
    const rotated = await client.webhooks.rotateSecret(endpoint.endpointId)
    await client.executions.execute({ tool: "demo.echo", input: { n: 2 } })
    const second = await eventually(() => receiver.received[before + 1], 10_000, "the second delivery")
    expect(verifyWebhook(rotated.secret, second.headers, second.rawBody).ok).toBe(true)
    expect(verifyWebhook(endpoint.secret, second.headers, second.rawBody)).toEqual({ ok: false, reason: "bad_signature" })

    await eventually(async () => {
      const page = await client.webhooks.listDeliveries(endpoint.endpointId)
      return page.deliveries.length === 2 || undefined
    }, 10_000, "two delivery records")
    const firstPage = await client.webhooks.listDeliveries(endpoint.endpointId, { limit: 1 })
    expect(firstPage.deliveries).toHaveLength(1)
    expect(firstPage.nextCursor).toBeDefined()
    const effectClient = makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY })
    const secondPage = await Effect.runPromise(effectClient.webhooks.listDeliveries(endpoint.endpointId, { limit: 1, cursor: firstPage.nextCursor }))
    expect(secondPage.deliveries.map((d) => d.eventId)).toEqual([envelope.id])
    expect(secondPage.nextCursor).toBeUndefined()
    await client.webhooks.delete(endpoint.endpointId)
  })

  it("errors: 404 for unknown endpoints, 403 for a pinned key, 422 for bad input", async () => {
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
    const missing = "whe_00000000000000000000000000000000"
    for (const call of [
      () => client.webhooks.get(missing),
      () => client.webhooks.update(missing, { active: false }),
      () => client.webhooks.rotateSecret(missing),
      () => client.webhooks.delete(missing),
      () => client.webhooks.listDeliveries(missing)
    ]) {
      expect(await rejection(call())).toMatchObject({ status: 404, code: "not_found", retryable: false })
    }

    const endpoint = await client.webhooks.create({ url: URL_OK, events: ["execution.completed"] })
    const pinned = createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY })
    for (const call of [
      () => pinned.webhooks.create({ url: URL_OK, events: ["execution.completed"] }),
      () => pinned.webhooks.list(),
      () => pinned.webhooks.get(endpoint.endpointId),
      () => pinned.webhooks.update(endpoint.endpointId, { active: false }),
      () => pinned.webhooks.rotateSecret(endpoint.endpointId),
      () => pinned.webhooks.delete(endpoint.endpointId),
      () => pinned.webhooks.listDeliveries(endpoint.endpointId)
    ]) {
      expect(await rejection(call())).toMatchObject({ status: 403, code: "auth_insufficient_scope" })
    }

    const invalid = await rejection(client.webhooks.create({ url: "http://93.184.215.14/plain", events: ["execution.completed"] }))
    expect(invalid).toMatchObject({ status: 422, code: "invalid_input", retryable: false })
    expect(invalid.requestId).toMatch(/^req_/)
    expect(await rejection(client.webhooks.create({ url: URL_OK, events: ["execution.started"] }))).toMatchObject({ status: 422 })
    expect(await rejection(client.webhooks.update(endpoint.endpointId, {}))).toMatchObject({ status: 422, code: "invalid_input" })
    expect(await rejection(client.webhooks.list({ limit: 0 }))).toMatchObject({ status: 422, code: "invalid_input" })
    expect(await rejection(client.webhooks.listDeliveries(endpoint.endpointId, { cursor: "forged" }))).toMatchObject({ status: 422 })
    // The endpoint is unchanged by the refused calls.
    expect(await client.webhooks.get(endpoint.endpointId)).toMatchObject({ active: true, events: ["execution.completed"] })
  })
})
