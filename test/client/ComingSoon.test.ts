/**
 * Methods for routes the server does not serve yet (subscriptions, trigger events, webhook
 * resend and recover): with a fake `fetch`, each builds the request the spec and
 * http/api/SubscriptionsApi.ts describe (method, path, query, body, headers) and decodes a
 * spec-shaped answer. The bodies they send are checked against the contract's payload schemas.
 */
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { createClient, type Fetch, makeServiceClient, ServiceError } from "../../client/index.ts"
import { CreateSubscriptionRequest, RecoverRequest } from "../../http/api/SubscriptionsApi.ts"

interface Sent {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly headers: Record<string, string>
  readonly body: unknown
}

/** A fetch that records each request and answers `status` with `body` as JSON (none for 204). */
const fakeFetch = (status: number, body?: unknown) => {
  const sent: Array<Sent> = []
  const fetch: Fetch = async (input, init) => {
    const url = new URL(input)
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value
    })
    sent.push({
      method: init.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers,
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined
    })
    return new Response(body === undefined ? null : JSON.stringify(body), {
      status,
      headers: { "content-type": "application/json", "request-id": "req_fake" }
    })
  }
  return { fetch, sent }
}

const BASE = "https://service.example/"
const clientWith = (status: number, body?: unknown, userId?: string) => {
  const fake = fakeFetch(status, body)
  return { ...fake, client: createClient({ baseUrl: BASE, apiKey: "key_fake", userId, fetch: fake.fetch }) }
}

const T = "2026-01-01T00:00:00.000Z"
const pushSubscription = {
  subscriptionId: "trgsub_1",
  projectId: "proj_1",
  userId: "user_1",
  trigger: "demo.event",
  webhookEndpointIds: ["whe_1"],
  filters: { type: "ping" },
  status: "active",
  createdAt: T,
  updatedAt: T
}
const pollingSubscription = {
  ...pushSubscription,
  subscriptionId: "trgsub_2",
  trigger: "github.issue_opened",
  connectionId: "conn_1",
  filters: { owner: "o", repo: "r", labels: ["bug"] },
  pollIntervalSeconds: 60
}
const delivery = { deliveryId: "whd_2", eventId: "evt_1", eventType: "execution.succeeded", endpointId: "whe_1", status: "pending", attempts: [] }
const triggerEvent = {
  arrivalId: "trgevt_1",
  eventId: "evt_trigger_1",
  subscriptionId: "trgsub_1",
  trigger: "demo.event",
  deliveryMode: "push",
  receivedAt: T,
  occurredAt: T,
  dedupStatus: "accepted",
  deliveryStatus: "partial",
  requestedWebhookEndpointIds: ["whe_1", "whe_2"],
  deliveryTargets: [
    { endpointId: "whe_1", deliveryId: "whd_1", status: "succeeded" },
    { endpointId: "whe_2", deliveryId: "whd_2", status: "failed" }
  ],
  expiresAt: "2026-01-08T00:00:00.000Z"
}

describe("subscriptions (coming soon)", () => {
  it("create: POST /v1/subscriptions with the client's default user; push answers carry ingestUrl", async () => {
    const created = { ...pushSubscription, ingestUrl: "https://service.example/v1/ingest/trgsub_1/trgsec_abc" }
    const { client, sent } = clientWith(201, created, "user_1")
    const request = { trigger: "demo.event", webhookEndpointIds: ["whe_1"], filters: { type: "ping" } }
    expect(await client.subscriptions.create(request)).toEqual(created)
    expect(sent).toEqual([{
      method: "POST",
      path: "/v1/subscriptions",
      query: {},
      headers: { authorization: "Bearer key_fake", accept: "application/json", "content-type": "application/json" },
      body: { ...request, userId: "user_1" }
    }])
    // What the client sends is what the contract accepts.
    expect(Schema.decodeUnknownSync(CreateSubscriptionRequest)(sent[0]?.body)).toEqual({ ...request, userId: "user_1" })
  })

  it("create: a polling subscription names its connection and cadence, and answers without ingestUrl", async () => {
    const { client, sent } = clientWith(201, pollingSubscription)
    const answer = await client.subscriptions.create({
      trigger: "github.issue_opened",
      userId: "user_1",
      connectionId: "conn_1",
      webhookEndpointIds: ["whe_1"],
      filters: { owner: "o", repo: "r", labels: ["bug"] },
      pollIntervalSeconds: 60
    })
    expect(answer).toEqual(pollingSubscription)
    expect("ingestUrl" in answer).toBe(false)
    expect(sent[0]?.body).toMatchObject({ connectionId: "conn_1", pollIntervalSeconds: 60 })
  })

  it("list: GET /v1/subscriptions with userId (the default user), limit and cursor", async () => {
    const page = { subscriptions: [pollingSubscription, pushSubscription], nextCursor: "next/1" }
    const { client, sent } = clientWith(200, page, "user_1")
    expect(await client.subscriptions.list({ limit: 2, cursor: "c/1" })).toEqual(page)
    await client.subscriptions.list({ userId: "user_2" })
    expect(sent.map(({ method, path, query, body }) => ({ method, path, query, body }))).toEqual([
      { method: "GET", path: "/v1/subscriptions", query: { limit: "2", cursor: "c/1", userId: "user_1" }, body: undefined },
      { method: "GET", path: "/v1/subscriptions", query: { userId: "user_2" }, body: undefined }
    ])
    // Without a default user an unpinned key lists the whole project.
    const projectWide = clientWith(200, page)
    await projectWide.client.subscriptions.list()
    expect(projectWide.sent[0]?.query).toEqual({})
  })

  it("get, rotateSecret and delete address one subscription, its id encoded", async () => {
    const get = clientWith(200, pushSubscription)
    expect(await get.client.subscriptions.get("trgsub_1")).toEqual(pushSubscription)
    const rotated = { subscriptionId: "trgsub_1", ingestUrl: "https://service.example/v1/ingest/trgsub_1/trgsec_new", rotatedAt: T }
    const rotate = clientWith(200, rotated)
    expect(await rotate.client.subscriptions.rotateSecret("trgsub_1")).toEqual(rotated)
    const remove = clientWith(204)
    expect(await remove.client.subscriptions.delete("trgsub/../x")).toBeUndefined()
    expect([...get.sent, ...rotate.sent, ...remove.sent].map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: "GET", path: "/v1/subscriptions/trgsub_1", body: undefined },
      { method: "POST", path: "/v1/subscriptions/trgsub_1/rotate-secret", body: undefined },
      { method: "DELETE", path: "/v1/subscriptions/trgsub%2F..%2Fx", body: undefined }
    ])
  })

  it("the Effect client has the same methods; a 404 (the route not served yet) is a ServiceError", async () => {
    const fake = fakeFetch(404, { error: { code: "not_found", message: "Not found.", retryable: false }, requestId: "req_fake" })
    const client = makeServiceClient({ baseUrl: BASE, apiKey: "k", fetch: fake.fetch })
    const error = await Effect.runPromise(Effect.flip(client.subscriptions.get("trgsub_1")))
    expect(error).toBeInstanceOf(ServiceError)
    expect(error).toMatchObject({ status: 404, code: "not_found", requestId: "req_fake" })
    const refused = fakeFetch(422, { error: { code: "invalid_input", message: "Polling subscriptions have no ingest secret.", retryable: false }, requestId: "req_fake" })
    const rotate = makeServiceClient({ baseUrl: BASE, apiKey: "k", fetch: refused.fetch }).subscriptions.rotateSecret("trgsub_2")
    expect(await Effect.runPromise(Effect.flip(rotate))).toMatchObject({ status: 422, code: "invalid_input" })
  })

  it("an answer that is not the spec's shape is a provider_error", async () => {
    const { client } = clientWith(200, { ...pushSubscription, webhookEndpointIds: "whe_1" })
    const error = await client.subscriptions.get("trgsub_1").then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(ServiceError)
    expect(error).toMatchObject({ status: 200, code: "provider_error", requestId: "req_fake" })
  })
})

describe("trigger events (coming soon)", () => {
  it("list: GET /v1/trigger-events with limit, cursor, subscriptionId and trigger", async () => {
    const duplicate = { ...triggerEvent, arrivalId: "trgevt_2", dedupStatus: "duplicate", deliveryStatus: "not_enqueued", deliveryTargets: [] }
    const page = { triggerEvents: [duplicate, triggerEvent], nextCursor: "n" }
    const { client, sent } = clientWith(200, page, "user_ignored")
    expect(await client.triggerEvents.list({ limit: 50, cursor: "c", subscriptionId: "trgsub_1", trigger: "demo.event" })).toEqual(page)
    await client.triggerEvents.list()
    // No userId: the route takes none (decisions: no user override).
    expect(sent.map(({ method, path, query }) => ({ method, path, query }))).toEqual([
      { method: "GET", path: "/v1/trigger-events", query: { limit: "50", cursor: "c", subscriptionId: "trgsub_1", trigger: "demo.event" } },
      { method: "GET", path: "/v1/trigger-events", query: {} }
    ])
  })

  it("refuses a row with a delivery status the spec does not list", async () => {
    const { client } = clientWith(200, { triggerEvents: [{ ...triggerEvent, deliveryStatus: "exploded" }] })
    await expect(client.triggerEvents.list()).rejects.toMatchObject({ code: "provider_error" })
  })
})

describe("webhook resend and recover (coming soon)", () => {
  it("resendDelivery: POST /v1/webhooks/:endpointId/deliveries/:deliveryId/resend answers the new delivery (202)", async () => {
    const { client, sent } = clientWith(202, delivery)
    expect(await client.webhooks.resendDelivery("whe_1", "whd_1")).toEqual(delivery)
    expect(sent).toMatchObject([{ method: "POST", path: "/v1/webhooks/whe_1/deliveries/whd_1/resend", query: {}, body: undefined }])
    expect(sent[0]?.headers["content-type"]).toBeUndefined()
  })

  it("resendDelivery: a trigger event whose payload is gone is 409, and is never retried", async () => {
    const { client, sent } = clientWith(409, { error: { code: "invalid_input", message: "The event's payload is gone.", retryable: false }, requestId: "req_fake" })
    await expect(client.webhooks.resendDelivery("whe_1", "whd_9")).rejects.toMatchObject({ status: 409, code: "invalid_input" })
    expect(sent).toHaveLength(1)
  })

  it("recover: POST /v1/webhooks/:endpointId/recover {since} from a string or a Date, answers {count} (202)", async () => {
    const { client, sent } = clientWith(202, { count: 3 })
    expect(await client.webhooks.recover("whe_1", { since: "2026-01-01T00:00:00Z" })).toEqual({ count: 3 })
    expect(await client.webhooks.recover("whe_1", { since: new Date(T) })).toEqual({ count: 3 })
    expect(sent.map(({ method, path, body }) => ({ method, path, body }))).toEqual([
      { method: "POST", path: "/v1/webhooks/whe_1/recover", body: { since: "2026-01-01T00:00:00Z" } },
      { method: "POST", path: "/v1/webhooks/whe_1/recover", body: { since: T } }
    ])
    for (const request of sent) expect(Schema.decodeUnknownSync(RecoverRequest)(request.body)).toEqual(request.body)
    const bad = clientWith(202, { count: "3" })
    await expect(bad.client.webhooks.recover("whe_1", { since: T })).rejects.toMatchObject({ code: "provider_error" })
  })
})
