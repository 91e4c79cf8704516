/**
 * The client's trigger methods against the real service in this process: subscriptions (create,
 * list, get, rotateSecret, delete), the trigger event history, and a webhook endpoint's
 * resendDelivery and recover, with the deliveries received at a local HTTPS receiver. Providers
 * post to the ingest URL themselves, so that step is a plain fetch. A recording `fetch` handed to
 * the client checks what it sends (paths, encoded ids, bodies, the default user) next to the
 * status the service answered. Errors: 422, 401, another project's 404, a pinned key's 403, and
 * an answer that does not match the contract.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, createClient, type Fetch, makeServiceClient, ServiceClient, ServiceError, verifyWebhook } from "../../client/index.ts"
import { type InProcessService, KEY, OTHER_KEY, PINNED_KEY, TEST_KEYS } from "../support/Service.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { startMemoryWebhookService } from "../support/Webhooks.ts"
import { rejection } from "./Rejection.ts"

// The base URL the service puts in ingest URLs; the tests post to the port they started.
const PUBLIC_BASE = "https://hooks.service.example"
const INGEST_URL = /^https:\/\/hooks\.service\.example\/v1\/ingest\/(trgsub_[0-9a-z]{32})\/trgsec_[A-Za-z0-9_-]{43}$/
const EVENT_TIME = 1_700_000_000

interface Sent {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string>
  readonly contentType: string | null
  readonly body: unknown
  readonly status: number
}

/** The global fetch, recording each request the client made and the status it got. */
const recordingFetch = () => {
  const sent: Array<Sent> = []
  const fetchImpl: Fetch = async (input, init) => {
    const response = await fetch(input, init)
    const url = new URL(input)
    sent.push({
      method: init.method ?? "GET",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: new Headers(init.headers).get("content-type"),
      body: typeof init.body === "string" ? JSON.parse(init.body) : undefined,
      status: response.status
    })
    return response
  }
  return { fetch: fetchImpl, sent }
}

describe("client: subscriptions, trigger events, resend and recover against the service", () => {
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void>
  let project: Client

  /** A provider's push: an event_callback to the ingest URL's path on this service. */
  const push = async (ingestUrl: string, eventId: string, type = "ping") => {
    const response = await fetch(`${service.baseUrl}${new URL(ingestUrl).pathname}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "event_callback", event_id: eventId, event_time: EVENT_TIME, event: { type, id: eventId } })
    })
    return { status: response.status, body: await response.json().catch(() => undefined) as unknown }
  }

  const receivedAt = (path: string) => receiver.received.filter((request) => request.path === path)

  /** The endpoint's delivery records once `check` holds for them. */
  const deliveriesWhen = (endpointId: string, check: (deliveries: Awaited<ReturnType<Client["webhooks"]["listDeliveries"]>>["deliveries"]) => boolean, what: string) =>
    eventually(async () => {
      const { deliveries } = await project.webhooks.listDeliveries(endpointId)
      return check(deliveries) ? deliveries : undefined
    }, 20_000, what)

  beforeAll(async () => {
    const started = await startMemoryWebhookService({
      SERVICE_API_KEYS: TEST_KEYS,
      SERVICE_BASE_URL: PUBLIC_BASE,
      SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,50,50,50,50",
      // Polling subscriptions made here must not reach GitHub: nothing listens there.
      SERVICE_GITHUB_API_URL: "http://127.0.0.1:1",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000"
    })
    service = started.service
    receiver = started.receiver
    close = started.close
    project = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
  })
  afterAll(async () => close())

  it("a push subscription: create (ingestUrl once), list, get, ingest, history, rotateSecret, delete", async () => {
    const recorder = recordingFetch()
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY, userId: "client_user", fetch: recorder.fetch })
    const endpoint = await client.webhooks.create({ url: receiver.url("/journey"), events: ["trigger.*"] })

    // Create: the default user goes in the body; the answer is the public form plus ingestUrl.
    recorder.sent.length = 0
    const created = await client.subscriptions.create({ trigger: "demo.event", webhookEndpointIds: [endpoint.endpointId], filters: { type: "ping" } })
    expect(recorder.sent).toEqual([{
      method: "POST",
      path: "/v1/subscriptions",
      query: {},
      contentType: "application/json",
      body: { trigger: "demo.event", webhookEndpointIds: [endpoint.endpointId], filters: { type: "ping" }, userId: "client_user" },
      status: 201
    }])
    expect(created).toEqual({
      subscriptionId: expect.stringMatching(/^trgsub_[0-9a-z]{32}$/),
      projectId: "proj_test",
      userId: "client_user",
      trigger: "demo.event",
      webhookEndpointIds: [endpoint.endpointId],
      filters: { type: "ping" },
      status: "active",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      ingestUrl: expect.stringMatching(INGEST_URL)
    })
    expect(INGEST_URL.exec(created.ingestUrl ?? "")?.[1]).toBe(created.subscriptionId)
    const { ingestUrl, ...publicForm } = created
    if (ingestUrl === undefined) throw new Error("a push subscription answers its ingestUrl")
    const someoneElses = await project.subscriptions.create({ trigger: "demo.event", userId: "other_user", webhookEndpointIds: [endpoint.endpointId] })

    // Get and list: never the ingestUrl again.
    const got = await client.subscriptions.get(created.subscriptionId)
    expect(got).toEqual(publicForm)
    expect("ingestUrl" in got).toBe(false)
    recorder.sent.length = 0
    expect(await client.subscriptions.list()).toEqual({ subscriptions: [publicForm] })
    expect(recorder.sent.map(({ path, query }) => ({ path, query }))).toEqual([{ path: "/v1/subscriptions", query: { userId: "client_user" } }])
    expect(await project.subscriptions.list({ userId: "client_user" })).toEqual({ subscriptions: [publicForm] })
    expect((await project.subscriptions.list({ userId: "nobody" })).subscriptions).toEqual([])
    // Without a default user an unpinned key lists the project, newest first, page by page.
    const first = await project.subscriptions.list({ limit: 1 })
    expect(first.subscriptions.map((s) => s.subscriptionId)).toEqual([someoneElses.subscriptionId])
    expect(first.nextCursor).toBeDefined()
    const second = await project.subscriptions.list({ limit: 1, cursor: first.nextCursor })
    expect(second.subscriptions).toEqual([publicForm])

    // The provider's push; the history shows the accepted row, delivered to the receiver.
    expect(await push(ingestUrl, "EvClientJourney1")).toEqual({ status: 202, body: { kind: "accepted", accepted: 1, duplicates: 0 } })
    recorder.sent.length = 0
    const row = await eventually(async () => {
      const page = await client.triggerEvents.list({ subscriptionId: created.subscriptionId })
      return page.triggerEvents[0]?.deliveryStatus === "succeeded" ? page.triggerEvents[0] : undefined
    }, 20_000, "a succeeded history row")
    expect(row).toEqual({
      arrivalId: expect.stringMatching(/^trgevt_/),
      eventId: expect.any(String),
      subscriptionId: created.subscriptionId,
      trigger: "demo.event",
      deliveryMode: "push",
      receivedAt: expect.any(String),
      occurredAt: new Date(EVENT_TIME * 1000).toISOString(),
      dedupStatus: "accepted",
      deliveryStatus: "succeeded",
      requestedWebhookEndpointIds: [endpoint.endpointId],
      deliveryTargets: [{ endpointId: endpoint.endpointId, deliveryId: expect.stringMatching(/^whd_/), status: "succeeded" }],
      expiresAt: expect.any(String)
    })
    // The history route takes no user: the client's default user is not sent.
    expect(recorder.sent.every((request) => request.path === "/v1/trigger-events" && !("userId" in request.query))).toBe(true)
    expect(recorder.sent[0]?.query).toEqual({ subscriptionId: created.subscriptionId })
    const [delivered] = receivedAt("/journey")
    expect(delivered?.headers["service-webhook-id"]).toBe(row.eventId)
    expect(verifyWebhook(endpoint.secret, delivered?.headers ?? {}, delivered?.rawBody ?? "")).toMatchObject({ ok: true, eventId: row.eventId })
    expect(JSON.parse(delivered?.rawBody ?? "{}")).toMatchObject({ id: row.eventId, type: "trigger.demo.event", data: { subscriptionId: created.subscriptionId, userId: "client_user" } })
    const byTrigger = await project.triggerEvents.list({ trigger: "demo.event" })
    expect(byTrigger.triggerEvents.map((r) => r.arrivalId)).toContain(row.arrivalId)
    // The same event again is a duplicate row, with nothing delivered.
    expect(await push(ingestUrl, "EvClientJourney1")).toEqual({ status: 202, body: { kind: "accepted", accepted: 0, duplicates: 1 } })
    const rows = (await project.triggerEvents.list({ subscriptionId: created.subscriptionId })).triggerEvents
    expect(rows.map((r) => [r.dedupStatus, r.deliveryStatus, r.deliveryTargets.length])).toEqual([["duplicate", "not_enqueued", 0], ["accepted", "succeeded", 1]])
    // Paged, one row at a time: the cursor leads to the older row, and no further.
    recorder.sent.length = 0
    const newest = await client.triggerEvents.list({ subscriptionId: created.subscriptionId, trigger: "demo.event", limit: 1 })
    expect(newest.triggerEvents.map((r) => r.arrivalId)).toEqual([rows[0]?.arrivalId])
    const older = await client.triggerEvents.list({ subscriptionId: created.subscriptionId, trigger: "demo.event", limit: 1, cursor: newest.nextCursor })
    expect(older).toEqual({ triggerEvents: [row] })
    expect(recorder.sent[1]?.query).toEqual({ subscriptionId: created.subscriptionId, trigger: "demo.event", limit: "1", cursor: newest.nextCursor })

    // Rotate: a new ingest URL; the old one answers 404 at once, the new one takes events.
    recorder.sent.length = 0
    const rotated = await client.subscriptions.rotateSecret(created.subscriptionId)
    expect(recorder.sent.map(({ method, path, body, status }) => ({ method, path, body, status })))
      .toEqual([{ method: "POST", path: `/v1/subscriptions/${created.subscriptionId}/rotate-secret`, body: undefined, status: 200 }])
    expect(rotated).toEqual({ subscriptionId: created.subscriptionId, ingestUrl: expect.stringMatching(INGEST_URL), rotatedAt: expect.any(String) })
    expect(rotated.ingestUrl).not.toBe(ingestUrl)
    expect((await push(ingestUrl, "EvClientJourney2")).status).toBe(404)
    expect(await push(rotated.ingestUrl, "EvClientJourney3")).toEqual({ status: 202, body: { kind: "accepted", accepted: 1, duplicates: 0 } })
    expect((await client.subscriptions.get(created.subscriptionId)).updatedAt).toBe(rotated.rotatedAt)

    // Delete: 204, then not_found everywhere, the ingest URL included; ids are sent encoded.
    recorder.sent.length = 0
    expect(await client.subscriptions.delete(created.subscriptionId)).toBeUndefined()
    const gone = await rejection(client.subscriptions.get(created.subscriptionId))
    expect(gone).toMatchObject({ _tag: "ServiceError", status: 404, code: "not_found", retryable: false, requestId: expect.stringMatching(/^req_/) })
    expect(await rejection(client.subscriptions.delete(created.subscriptionId))).toMatchObject({ status: 404, code: "not_found" })
    expect(await rejection(client.subscriptions.get("trgsub/../x"))).toMatchObject({ status: 404, code: "not_found" })
    expect(recorder.sent.map(({ method, path, status }) => `${method} ${path} ${status}`)).toEqual([
      `DELETE /v1/subscriptions/${created.subscriptionId} 204`,
      `GET /v1/subscriptions/${created.subscriptionId} 404`,
      `DELETE /v1/subscriptions/${created.subscriptionId} 404`,
      "GET /v1/subscriptions/trgsub%2F..%2Fx 404"
    ])
    expect((await push(rotated.ingestUrl, "EvClientJourney4")).status).toBe(404)
    expect((await project.subscriptions.list({ userId: "client_user" })).subscriptions).toEqual([])
    await project.subscriptions.delete(someoneElses.subscriptionId)
  })

  it("resendDelivery: a delivery that reached the receiver is sent again as a new delivery of the same event (202)", async () => {
    const recorder = recordingFetch()
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY, fetch: recorder.fetch })
    const endpoint = await client.webhooks.create({ url: receiver.url("/resend"), events: ["trigger.demo.event"] })
    const subscription = await client.subscriptions.create({ trigger: "demo.event", userId: "resend_user", webhookEndpointIds: [endpoint.endpointId] })
    expect((await push(subscription.ingestUrl ?? "", "EvClientResend")).status).toBe(202)
    const [original] = await deliveriesWhen(endpoint.endpointId, (d) => d.length === 1 && d[0]?.status === "succeeded", "the first delivery")
    if (original === undefined) throw new Error("no delivery")
    expect(receivedAt("/resend")).toHaveLength(1)

    recorder.sent.length = 0
    const resent = await client.webhooks.resendDelivery(endpoint.endpointId, original.deliveryId)
    // A POST without a body (and so without a content type), answered 202.
    expect(recorder.sent).toEqual([{
      method: "POST",
      path: `/v1/webhooks/${endpoint.endpointId}/deliveries/${original.deliveryId}/resend`,
      query: {},
      contentType: null,
      body: undefined,
      status: 202
    }])
    expect(resent).toEqual({
      deliveryId: expect.stringMatching(/^whd_/),
      eventId: original.eventId,
      eventType: "trigger.demo.event",
      endpointId: endpoint.endpointId,
      status: "pending",
      attempts: []
    })
    expect(resent.deliveryId).not.toBe(original.deliveryId)

    // It arrives: the same event, byte for byte, signed again.
    await eventually(() => (receivedAt("/resend").length === 2 ? true : undefined), 10_000, "the resent delivery")
    const [first, again] = receivedAt("/resend")
    expect(again?.headers["service-webhook-id"]).toBe(original.eventId)
    expect(again?.rawBody).toBe(first?.rawBody)
    expect(verifyWebhook(endpoint.secret, again?.headers ?? {}, again?.rawBody ?? "")).toMatchObject({ ok: true, eventId: original.eventId })
    const records = await deliveriesWhen(endpoint.endpointId, (d) => d.length === 2 && d.every((r) => r.status === "succeeded"), "two succeeded deliveries")
    expect(records.map((r) => r.deliveryId).toSorted()).toEqual([original.deliveryId, resent.deliveryId].toSorted())
    expect(records.find((r) => r.deliveryId === resent.deliveryId)?.attempts).toEqual([{ attemptedAt: expect.any(String), statusCode: 200 }])

    expect(await rejection(client.webhooks.resendDelivery(endpoint.endpointId, "whd_missing"))).toMatchObject({ status: 404, code: "not_found" })
    await client.subscriptions.delete(subscription.subscriptionId)
  })

  it("recover: failed deliveries since a time are queued again, counted, and succeed", async () => {
    receiver.respond = (request) => ({ status: request.path === "/recover" ? 500 : 200 })
    try {
      const recorder = recordingFetch()
      const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY, fetch: recorder.fetch })
      const endpoint = await client.webhooks.create({ url: receiver.url("/recover"), events: ["trigger.*"] })
      const subscription = await client.subscriptions.create({ trigger: "demo.event", userId: "recover_user", webhookEndpointIds: [endpoint.endpointId] })
      const since = new Date(Date.now() - 1_000)
      expect((await push(subscription.ingestUrl ?? "", "EvClientRecover1")).status).toBe(202)
      expect((await push(subscription.ingestUrl ?? "", "EvClientRecover2")).status).toBe(202)
      // Five attempts each (0, 50, 50, 50, 50 ms apart), every one answered 500.
      const failed = await deliveriesWhen(endpoint.endpointId, (d) => d.length === 2 && d.every((r) => r.status === "failed"), "two failed deliveries")
      for (const delivery of failed) expect(delivery.attempts.map((a) => ("statusCode" in a ? a.statusCode : a.error))).toEqual([500, 500, 500, 500, 500])
      const history = (await client.triggerEvents.list({ subscriptionId: subscription.subscriptionId })).triggerEvents
      expect(history.map((r) => r.deliveryStatus)).toEqual(["failed", "failed"])

      receiver.respond = () => ({ status: 200 })
      recorder.sent.length = 0
      expect(await client.webhooks.recover(endpoint.endpointId, { since: new Date(Date.now() + 60_000) })).toEqual({ count: 0 })
      const recovered = await client.webhooks.recover(endpoint.endpointId, { since })
      expect(recovered.count).toBeGreaterThan(0)
      expect(recovered).toEqual({ count: 2 })
      // `since` as a Date is sent as its ISO string.
      expect(recorder.sent.map(({ method, path, contentType, status }) => ({ method, path, contentType, status }))).toEqual(Array.from({ length: 2 }, () => ({
        method: "POST", path: `/v1/webhooks/${endpoint.endpointId}/recover`, contentType: "application/json", status: 202
      })))
      expect(recorder.sent[1]?.body).toEqual({ since: since.toISOString() })

      const records = await deliveriesWhen(endpoint.endpointId, (d) => d.filter((r) => r.status === "succeeded").length === 2, "two recovered deliveries")
      const succeeded = records.filter((r) => r.status === "succeeded")
      expect(succeeded.map((r) => r.eventId).toSorted()).toEqual(failed.map((r) => r.eventId).toSorted())
      expect(succeeded.every((r) => !failed.some((f) => f.deliveryId === r.deliveryId))).toBe(true)
      const answeredOk = receivedAt("/recover").slice(-2)
      expect(answeredOk.map((r) => r.headers["service-webhook-id"]).toSorted()).toEqual(failed.map((r) => r.eventId).toSorted())
      for (const request of answeredOk) expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody).ok).toBe(true)
      // A string since works the same; nothing failed after now.
      expect(await client.webhooks.recover(endpoint.endpointId, { since: new Date(Date.now() + 1_000).toISOString() })).toEqual({ count: 0 })
      await client.subscriptions.delete(subscription.subscriptionId)
    } finally {
      receiver.respond = () => ({ status: 200 })
    }
  })

  it("the Effect client: the same routes, failures typed as ServiceError", async () => {
    const program = Effect.gen(function*() {
      const client = yield* ServiceClient
      const endpoint = yield* client.webhooks.create({ url: receiver.url("/effect"), events: ["trigger.*"], active: false })
      const pushed = yield* client.subscriptions.create({ trigger: "demo.event", userId: "effect_user", webhookEndpointIds: [endpoint.endpointId] })
      const got = yield* client.subscriptions.get(pushed.subscriptionId)
      const listed = yield* client.subscriptions.list({ userId: "effect_user" })
      // A polling trigger: its connection and cadence, no ingestUrl, and no secret to rotate (422).
      const connection = yield* client.connections.create({ userId: "effect_user", toolkit: "github", authClass: "bearer", credentials: { token: "t" }, scopes: ["issues:read"] })
      const polling = yield* client.subscriptions.create({
        trigger: "github.issue_opened",
        userId: "effect_user",
        connectionId: connection.connectionId,
        webhookEndpointIds: [endpoint.endpointId],
        filters: { owner: "octo", repo: "hello", labels: ["bug"] },
        pollIntervalSeconds: 60
      })
      const refused = yield* Effect.flip(client.subscriptions.rotateSecret(polling.subscriptionId))
      yield* client.subscriptions.delete(polling.subscriptionId)
      yield* client.subscriptions.delete(pushed.subscriptionId)
      const afterDelete = yield* client.subscriptions.get(pushed.subscriptionId).pipe(
        Effect.catchTag("ServiceError", (error) => Effect.succeed(`${error.status} ${error.code}`))
      )
      const events = yield* client.triggerEvents.list({ subscriptionId: pushed.subscriptionId })
      return { pushed, got, listed, polling, connection, refused, afterDelete, events }
    })
    const result = await Effect.runPromise(program.pipe(Effect.provide(ServiceClient.layer({ baseUrl: service.baseUrl, apiKey: KEY }))))
    const { ingestUrl, ...publicForm } = result.pushed
    expect(ingestUrl).toMatch(INGEST_URL)
    expect(result.got).toEqual(publicForm)
    expect(result.listed).toEqual({ subscriptions: [publicForm] })
    expect(result.polling).toEqual({
      ...publicForm,
      subscriptionId: expect.stringMatching(/^trgsub_/),
      trigger: "github.issue_opened",
      connectionId: result.connection.connectionId,
      filters: { owner: "octo", repo: "hello", labels: ["bug"] },
      pollIntervalSeconds: 60,
      createdAt: expect.any(String),
      updatedAt: expect.any(String)
    })
    expect("ingestUrl" in result.polling).toBe(false)
    expect(result.refused).toBeInstanceOf(ServiceError)
    expect(result.refused).toMatchObject({ status: 422, code: "invalid_input", retryable: false })
    expect(result.afterDelete).toBe("404 not_found")
    expect(result.events).toEqual({ triggerEvents: [] })
    // makeServiceClient without a layer: the same error class.
    const missing = await Effect.runPromise(Effect.flip(makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY }).webhooks.recover("whe_missing", { since: new Date(0) })))
    expect(missing).toBeInstanceOf(ServiceError)
    expect(missing).toMatchObject({ status: 404, code: "not_found" })
  })

  it("errors through the client: 422, 401, another project's 404, a pinned key's 403, an answer off the contract", async () => {
    const endpoint = await project.webhooks.create({ url: receiver.url("/errors"), events: ["trigger.*"] })
    const subscription = await project.subscriptions.create({ trigger: "demo.event", userId: "errors_user", webhookEndpointIds: [endpoint.endpointId] })
    expect((await push(subscription.ingestUrl ?? "", "EvClientErrors")).status).toBe(202)
    const [delivery] = await deliveriesWhen(endpoint.endpointId, (d) => d[0]?.status === "succeeded", "a delivery")
    if (delivery === undefined) throw new Error("no delivery")

    // 422: what the service refuses to take.
    const unknownTrigger = await rejection(project.subscriptions.create({ trigger: "demo.nope", userId: "errors_user", webhookEndpointIds: [endpoint.endpointId] }))
    expect(unknownTrigger).toMatchObject({ status: 422, code: "invalid_input", retryable: false, requestId: expect.stringMatching(/^req_/) })
    expect(await rejection(project.subscriptions.create({ trigger: "demo.event", webhookEndpointIds: [endpoint.endpointId] })))
      .toMatchObject({ status: 422, code: "invalid_input" })
    expect(await rejection(project.webhooks.recover(endpoint.endpointId, { since: "yesterday" }))).toMatchObject({ status: 422, code: "invalid_input" })
    expect(await rejection(project.triggerEvents.list({ subscriptionId: "not_a_subscription" }))).toMatchObject({ status: 422, code: "invalid_input" })

    // 401: a key the service does not know.
    const stranger = createClient({ baseUrl: service.baseUrl, apiKey: "not_a_real_key_000000" })
    for (const call of [
      () => stranger.subscriptions.list(),
      () => stranger.subscriptions.get(subscription.subscriptionId),
      () => stranger.triggerEvents.list(),
      () => stranger.webhooks.resendDelivery(endpoint.endpointId, delivery.deliveryId),
      () => stranger.webhooks.recover(endpoint.endpointId, { since: new Date(0) })
    ]) {
      expect(await rejection(call()), String(call)).toMatchObject({ status: 401, code: "auth_expired", retryable: false })
    }

    // Another project's key sees none of it: 404, or an empty list.
    const other = createClient({ baseUrl: service.baseUrl, apiKey: OTHER_KEY })
    for (const call of [
      () => other.subscriptions.get(subscription.subscriptionId),
      () => other.subscriptions.rotateSecret(subscription.subscriptionId),
      () => other.subscriptions.delete(subscription.subscriptionId),
      () => other.webhooks.resendDelivery(endpoint.endpointId, delivery.deliveryId),
      () => other.webhooks.recover(endpoint.endpointId, { since: new Date(0) })
    ]) {
      expect(await rejection(call()), String(call)).toMatchObject({ status: 404, code: "not_found", retryable: false })
    }
    expect(await other.subscriptions.list()).toEqual({ subscriptions: [] })
    expect(await other.triggerEvents.list({ subscriptionId: subscription.subscriptionId })).toEqual({ triggerEvents: [] })
    // Nothing it tried changed anything.
    expect((await project.subscriptions.get(subscription.subscriptionId)).status).toBe("active")
    expect((await push(subscription.ingestUrl ?? "", "EvClientErrors2")).status).toBe(202)

    // A pinned key: no history, resend or recover (403); another user's subscription is 404.
    const pinned = createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY })
    for (const call of [
      () => pinned.triggerEvents.list(),
      () => pinned.webhooks.resendDelivery(endpoint.endpointId, delivery.deliveryId),
      () => pinned.webhooks.recover(endpoint.endpointId, { since: new Date(0) }),
      () => pinned.subscriptions.list({ userId: "errors_user" })
    ]) {
      expect(await rejection(call()), String(call)).toMatchObject({ status: 403, code: "auth_insufficient_scope" })
    }
    expect(await rejection(pinned.subscriptions.get(subscription.subscriptionId))).toMatchObject({ status: 404, code: "not_found" })

    // A 200 whose body is not the contract's shape is provider_error with that status.
    const tampering: Fetch = async (input, init) => {
      const response = await fetch(input, init)
      const body = (await response.json()) as { triggerEvents: Array<Record<string, unknown>> }
      const triggerEvents = body.triggerEvents.map((row) => ({ ...row, deliveryStatus: "exploded" }))
      return new Response(JSON.stringify({ ...body, triggerEvents }), { status: response.status, headers: response.headers })
    }
    const tampered = await rejection(createClient({ baseUrl: service.baseUrl, apiKey: KEY, fetch: tampering }).triggerEvents.list({ subscriptionId: subscription.subscriptionId }))
    expect(tampered).toMatchObject({ status: 200, code: "provider_error", retryable: false, requestId: expect.stringMatching(/^req_/) })
    await project.subscriptions.delete(subscription.subscriptionId)
  })
})
