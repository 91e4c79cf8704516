/**
 * Subscription routes (spec, "Subscriptions"; decisions.md section 5) through a real port, in
 * memory and on Postgres: the public form, every refusal decisions 5 lists, the userId rules of
 * lists, pinned keys, rotation and deletion.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CONNECTION_STREAM_TYPE, connectionCodec, connectionStreamId } from "../../domain/Connection.ts"
import { Secrets } from "../../infra/access/Secrets.ts"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { newId } from "../../infra/Ids.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, KEY, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { createConnection, createTriggerEndpoint, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"

const LIMITS = { SERVICE_RATE_LIMIT_REQUEST_BURST: "10000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000", SERVICE_TRIGGER_MIN_POLL_SECONDS: "10" }
// A public literal address: create-time checks need no DNS, and nothing here is delivered.
const URL_OK = "https://93.184.215.14/hooks"
const PUBLIC_FIELDS = ["createdAt", "filters", "projectId", "status", "subscriptionId", "trigger", "updatedAt", "userId", "webhookEndpointIds"]

const expectError = async (response: Response, status: number, code = "invalid_input") => {
  const body = (await response.json()) as { error: { code: string; message: string } }
  expect(response.status, JSON.stringify(body)).toBe(status)
  expect(body.error.code).toBe(code)
  return body.error.message
}

const suite = (name: string, env: () => Promise<Record<string, string>>, cleanup: () => Promise<void>) =>
  describe(name, () => {
    let service: InProcessService
    let endpointId: string
    let exactEndpointId: string
    let inactiveEndpointId: string
    let executionEndpointId: string
    let otherProjectEndpointId: string
    let githubConnection: string
    const post = (json: unknown, key: string | null = KEY, headers: Record<string, string> = {}) =>
      service.fetch("/v1/subscriptions", { method: "POST", json, key, headers })

    beforeAll(async () => {
      service = await startService({ ...LIMITS, ...(await env()) })
      endpointId = (await createTriggerEndpoint(service, URL_OK, { active: false })).endpointId
      exactEndpointId = (await createTriggerEndpoint(service, URL_OK, { events: ["trigger.demo.event"], active: false })).endpointId
      inactiveEndpointId = (await createTriggerEndpoint(service, URL_OK, { active: false })).endpointId
      executionEndpointId = (await createTriggerEndpoint(service, URL_OK, { events: ["execution.completed"], active: false })).endpointId
      otherProjectEndpointId = (await createTriggerEndpoint(service, URL_OK, { key: OTHER_KEY, active: false })).endpointId
      githubConnection = (await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "t" }, scopes: ["issues:read"] })).connectionId
    })
    afterAll(async () => {
      await service.close()
      await cleanup()
    })

    it("creates a push subscription: the public form plus its ingest URL, this once", async () => {
      const created = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId, exactEndpointId], filters: { type: "ping" } })
      expect(Object.keys(created).toSorted()).toEqual([...PUBLIC_FIELDS, "ingestUrl"].toSorted())
      expect(created).toMatchObject({ projectId: "proj_test", userId: "u1", trigger: "demo.event", status: "active", filters: { type: "ping" } })
      expect(created.subscriptionId).toMatch(/^trgsub_[0-9a-z]{32}$/)
      expect(created.ingestUrl).toMatch(new RegExp(`^http://localhost:0/v1/ingest/${created.subscriptionId}/trgsec_[A-Za-z0-9_-]{43}$`))
      const got = await service.fetch(`/v1/subscriptions/${created.subscriptionId}`)
      const body = (await got.json()) as Record<string, unknown>
      expect(Object.keys(body).toSorted()).toEqual(PUBLIC_FIELDS)
      const list = await (await service.fetch("/v1/subscriptions?userId=u1")).text()
      expect(list).not.toContain("trgsec_")
      expect(list).not.toContain("ingest")
      // The log keeps only the secret's hash.
      const runtime = service.runtime
      const stored = await runtime.runPromise(Effect.flatMap(EventStore, (store) => store.readStream(`trigger-subscription-${created.subscriptionId}`)))
      expect(JSON.stringify(stored.map((event) => event.data))).not.toContain(ingestPath(created).split("/").pop())
    })

    it("creates a polling subscription with its cadence (default 60) and no ingest URL", async () => {
      const created = await subscribe(service, { trigger: "github.issue_opened", userId: "u1", webhookEndpointIds: [endpointId], filters: { owner: "octo", repo: "hello" } })
      expect(Object.keys(created).toSorted()).toEqual([...PUBLIC_FIELDS, "connectionId", "pollIntervalSeconds"].toSorted())
      expect(created).toMatchObject({ connectionId: githubConnection, pollIntervalSeconds: 60 })
      const chosen = await subscribe(service, {
        trigger: "github.issue_opened", userId: "u1", connectionId: githubConnection, webhookEndpointIds: [endpointId],
        filters: { owner: "octo", repo: "hello", labels: ["bug"] }, pollIntervalSeconds: 10
      })
      expect(chosen.pollIntervalSeconds).toBe(10)
      await expectError(await service.fetch(`/v1/subscriptions/${chosen.subscriptionId}/rotate-secret`, { method: "POST" }), 422)
    })

    it("the user: body, else header, else the pinned key's; an unpinned key naming none is 422, a pinned key naming another 403", async () => {
      await expectError(await post({ trigger: "demo.event", webhookEndpointIds: [endpointId] }), 422)
      const headerUser = await post({ trigger: "demo.event", webhookEndpointIds: [endpointId] }, KEY, { "x-service-user-id": "u_header" })
      expect(((await headerUser.json()) as { userId: string }).userId).toBe("u_header")
      const pinned = await subscribe(service, { trigger: "demo.event", webhookEndpointIds: [endpointId] }, PINNED_KEY)
      expect(pinned.userId).toBe("user_1")
      await expectError(await post({ trigger: "demo.event", userId: "user_2", webhookEndpointIds: [endpointId] }, PINNED_KEY), 403, "auth_insufficient_scope")
      await expectError(await post({ trigger: "demo.event", webhookEndpointIds: [endpointId] }, PINNED_KEY, { "x-service-user-id": "user_2" }), 403, "auth_insufficient_scope")
      await expectError(await post({ trigger: "demo.event", webhookEndpointIds: [endpointId] }, null), 401, "auth_missing")
    })

    it("refuses every invalid create with 422", async () => {
      const demo = { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] }
      const github = { trigger: "github.issue_opened", userId: "u1", webhookEndpointIds: [endpointId], filters: { owner: "octo", repo: "hello" } }
      const slack = { trigger: "slack.message_posted", userId: "u1", webhookEndpointIds: [endpointId] }
      const otherUserConnection = (await createConnection(service, { userId: "u2", toolkit: "github", authClass: "bearer", credentials: { token: "t" } })).connectionId
      const otherProjectConnection = (await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "t" } }, OTHER_KEY)).connectionId
      const slackConnection = (await createConnection(service, { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: "t" } })).connectionId
      const narrow = (await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "t" }, scopes: ["issues:write"] })).connectionId
      const soon = new Date(Date.now() + 1_000).toISOString()
      const expiring = (await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "t" }, expiresAt: soon })).connectionId
      // A connection of a class the toolkit does not take can only be in the log (the route refuses it).
      const oddClass = newId("conn")
      const runtime = service.runtime
      const sealed = await runtime.runPromise(Effect.map(Secrets, (secrets) => secrets.seal(JSON.stringify({ accessToken: "t" }))))
      await runtime.runPromise(Effect.flatMap(EventStore, (store) => store.append([{
        streamId: connectionStreamId(oddClass),
        streamType: CONNECTION_STREAM_TYPE,
        expectedVersion: 0,
        events: [connectionCodec.encode({
          type: "ConnectionCreated", connectionId: oddClass, projectId: "proj_test", userId: "u1", toolkit: "github",
          authClass: "oauth2", scopes: [], createdAt: new Date().toISOString(), credentials: sealed
        }, newId("evt"))]
      }])))
      await new Promise((resolve) => setTimeout(resolve, 1_100))
      const cases: Array<[string, unknown]> = [
        ["unknown trigger", { ...demo, trigger: "demo.nope" }],
        ["wire name", { ...demo, trigger: "demo__event" }],
        ["unpinned key naming no user", { trigger: "demo.event", webhookEndpointIds: [endpointId] }],
        ["connection for a toolkit that takes none", { ...demo, connectionId: githubConnection }],
        ["missing connection", { ...github, connectionId: "conn_missing" }],
        ["another user's connection", { ...github, connectionId: otherUserConnection }],
        ["another project's connection", { ...github, connectionId: otherProjectConnection }],
        ["a connection of another toolkit", { ...github, connectionId: slackConnection }],
        ["an auth class the toolkit does not take", { ...github, connectionId: oddClass }],
        ["an expired connection", { ...github, connectionId: expiring }],
        ["a connection lacking the trigger's scopes", { ...github, connectionId: narrow }],
        ["no connection named among several", github],
        ["no connection at all", { ...slack, userId: "u9" }],
        ["missing endpoint", { ...demo, webhookEndpointIds: ["whe_missing"] }],
        ["another project's endpoint", { ...demo, webhookEndpointIds: [otherProjectEndpointId] }],
        ["an endpoint not subscribed to the trigger", { ...demo, webhookEndpointIds: [executionEndpointId] }],
        ["an endpoint subscribed to another trigger", { ...slack, connectionId: slackConnection, webhookEndpointIds: [exactEndpointId] }],
        ["repeated endpoints", { ...demo, webhookEndpointIds: [endpointId, endpointId] }],
        ["no endpoints", { ...demo, webhookEndpointIds: [] }],
        ["more than 20 endpoints", { ...demo, webhookEndpointIds: Array.from({ length: 21 }, (_, i) => `whe_${i}`) }],
        ["endpoints missing", { trigger: "demo.event", userId: "u1" }],
        ["filters with an unknown field", { ...demo, filters: { channel: "C1" } }],
        ["filters of the wrong type", { ...demo, filters: { type: 5 } }],
        ["github filters without a repo", { ...github, connectionId: githubConnection, filters: { owner: "octo" } }],
        ["github filters with a bad owner", { ...github, connectionId: githubConnection, filters: { owner: "../x", repo: "r" } }],
        ["filters not an object", { ...demo, filters: [] }],
        // Outside audit: filter strings had no bound but the 1 MiB body, and came back in every read.
        ["a filter value over 255 characters", { ...demo, filters: { type: "t".repeat(256) } }],
        ["a slack channel filter over 255 characters", { ...slack, connectionId: slackConnection, filters: { channel: "C".repeat(256) } }],
        ["a github label over 255 characters", { ...github, connectionId: githubConnection, filters: { owner: "octo", repo: "r", labels: ["l".repeat(256)] } }],
        ["more than 100 github labels", { ...github, connectionId: githubConnection, filters: { owner: "octo", repo: "r", labels: Array.from({ length: 101 }, (_, i) => `l${i}`) } }],
        ["pollIntervalSeconds on a push trigger", { ...demo, pollIntervalSeconds: 60 }],
        ["pollIntervalSeconds below the minimum", { ...github, connectionId: githubConnection, pollIntervalSeconds: 9 }],
        ["pollIntervalSeconds above 86400", { ...github, connectionId: githubConnection, pollIntervalSeconds: 86_401 }],
        ["pollIntervalSeconds not an integer", { ...github, connectionId: githubConnection, pollIntervalSeconds: 60.5 }],
        ["an unknown field", { ...demo, extra: true }],
        ["a bad user id", { ...demo, userId: "bad user" }]
      ]
      const messages = new Map<string, string>()
      for (const [what, body] of cases) {
        const response = await post(body)
        const answer = await response.text()
        expect(response.status, `${what}: ${answer}`).toBe(422)
        expect(JSON.parse(answer).error.code, what).toBe("invalid_input")
        messages.set(what, JSON.parse(answer).error.message)
      }
      // Either side of the range names the range this service takes (its minimum is configured).
      expect(messages.get("pollIntervalSeconds below the minimum")).toContain("from 10 to 86400")
      expect(messages.get("pollIntervalSeconds above 86400")).toContain("from 10 to 86400")
      // An inactive endpoint is allowed (checked again at delivery).
      await subscribe(service, { ...demo, webhookEndpointIds: [inactiveEndpointId, exactEndpointId] })
    })

    it("lists newest first, by user, with cursors; a pinned key lists only its user's", async () => {
      const mine: Array<string> = []
      for (let i = 0; i < 3; i++) mine.push((await subscribe(service, { trigger: "demo.event", userId: "lister", webhookEndpointIds: [endpointId] })).subscriptionId)
      const first = (await (await service.fetch("/v1/subscriptions?userId=lister&limit=2")).json()) as { subscriptions: Array<{ subscriptionId: string }>; nextCursor?: string }
      expect(first.subscriptions.map((s) => s.subscriptionId)).toEqual([mine[2], mine[1]])
      const second = (await (await service.fetch(`/v1/subscriptions?userId=lister&limit=2&cursor=${encodeURIComponent(first.nextCursor ?? "")}`)).json()) as typeof first
      expect(second.subscriptions.map((s) => s.subscriptionId)).toEqual([mine[0]])
      expect(second.nextCursor).toBeUndefined()
      await expectError(await service.fetch(`/v1/subscriptions?userId=other&cursor=${encodeURIComponent(first.nextCursor ?? "")}`), 422)
      await expectError(await service.fetch(`/v1/subscriptions?cursor=${encodeURIComponent(`${first.nextCursor}x`)}`), 422)
      await expectError(await service.fetch("/v1/subscriptions?limit=0"), 422)
      await expectError(await service.fetch("/v1/subscriptions?limit=101"), 422)
      await expectError(await service.fetch("/v1/subscriptions?colour=red"), 422)
      const project = (await (await service.fetch("/v1/subscriptions")).json()) as typeof first
      expect(project.subscriptions.some((s) => s.subscriptionId === mine[0])).toBe(true)
      const pinned = (await (await service.fetch("/v1/subscriptions", { key: PINNED_KEY })).json()) as { subscriptions: Array<{ userId: string }> }
      expect(pinned.subscriptions.length).toBeGreaterThan(0)
      expect(pinned.subscriptions.every((s) => s.userId === "user_1")).toBe(true)
      await expectError(await service.fetch("/v1/subscriptions?userId=lister", { key: PINNED_KEY }), 403, "auth_insufficient_scope")
      await expectError(await service.fetch("/v1/subscriptions", { key: PINNED_KEY, headers: { "x-service-user-id": "lister" } }), 403, "auth_insufficient_scope")
      const other = (await (await service.fetch("/v1/subscriptions", { key: OTHER_KEY })).json()) as typeof first
      expect(other.subscriptions).toEqual([])
    })

    it("get, rotate and delete: another project's or another user's (pinned, or named by the header) is 404", async () => {
      const theirs = await subscribe(service, { trigger: "demo.event", userId: "someone", webhookEndpointIds: [endpointId] })
      const id = theirs.subscriptionId
      for (const key of [OTHER_KEY, PINNED_KEY]) {
        await expectError(await service.fetch(`/v1/subscriptions/${id}`, { key }), 404, "not_found")
        await expectError(await service.fetch(`/v1/subscriptions/${id}/rotate-secret`, { method: "POST", key }), 404, "not_found")
        await expectError(await service.fetch(`/v1/subscriptions/${id}`, { method: "DELETE", key }), 404, "not_found")
      }
      // An unpinned key acting for another user (X-Service-User-Id) does not see it either.
      const asOther = { headers: { "x-service-user-id": "someone_else" } }
      await expectError(await service.fetch(`/v1/subscriptions/${id}`, asOther), 404, "not_found")
      await expectError(await service.fetch(`/v1/subscriptions/${id}/rotate-secret`, { method: "POST", ...asOther }), 404, "not_found")
      await expectError(await service.fetch(`/v1/subscriptions/${id}`, { method: "DELETE", ...asOther }), 404, "not_found")
      expect((await service.fetch(`/v1/subscriptions/${id}`, { headers: { "x-service-user-id": "someone" } })).status).toBe(200)
      expect((await service.fetch(`/v1/subscriptions/${id}`)).status).toBe(200)
      await expectError(await service.fetch("/v1/subscriptions/trgsub_nope"), 404, "not_found")
      const mine = await subscribe(service, { trigger: "demo.event", webhookEndpointIds: [endpointId] }, PINNED_KEY)
      expect((await service.fetch(`/v1/subscriptions/${mine.subscriptionId}`, { key: PINNED_KEY })).status).toBe(200)
    })

    it("rotate-secret: a new URL that works; the old one stops at once", async () => {
      const created = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      const ping = { type: "url_verification", challenge: "c1" }
      expect((await postIngest(service, ingestPath(created), ping)).status).toBe(200)
      const rotated = (await (await service.fetch(`/v1/subscriptions/${created.subscriptionId}/rotate-secret`, { method: "POST" })).json()) as {
        subscriptionId: string; ingestUrl: string; rotatedAt: string
      }
      expect(Object.keys(rotated).toSorted()).toEqual(["ingestUrl", "rotatedAt", "subscriptionId"])
      expect(rotated.ingestUrl).not.toBe(created.ingestUrl)
      expect((await postIngest(service, ingestPath(created), ping)).status).toBe(404)
      expect((await postIngest(service, new URL(rotated.ingestUrl).pathname, ping)).status).toBe(200)
      const after = (await (await service.fetch(`/v1/subscriptions/${created.subscriptionId}`)).json()) as { updatedAt: string }
      expect(after.updatedAt).toBe(rotated.rotatedAt)
    })

    it("delete: 204, then 404 everywhere, ingest included", async () => {
      const created = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      const removed = await service.fetch(`/v1/subscriptions/${created.subscriptionId}`, { method: "DELETE" })
      expect(removed.status).toBe(204)
      await expectError(await service.fetch(`/v1/subscriptions/${created.subscriptionId}`), 404, "not_found")
      await expectError(await service.fetch(`/v1/subscriptions/${created.subscriptionId}`, { method: "DELETE" }), 404, "not_found")
      expect((await postIngest(service, ingestPath(created), { type: "url_verification", challenge: "c" })).status).toBe(404)
    })
  })

suite("subscriptions (memory)", async () => ({}), async () => {})

let databaseUrl: string | undefined
describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite(
    "subscriptions (postgres)",
    async () => {
      databaseUrl = await createTestDatabase("subs")
      return { SERVICE_DATABASE_URL: databaseUrl, SERVICE_SECRET_KEY: Buffer.alloc(32, 5).toString("base64") }
    },
    async () => {
      if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
    }
  )
})
