/**
 * Trigger events end to end, through HTTP only (decisions.md section 5): a Slack-shaped event
 * posted to the ingest URL, and an issue polled from a local fake GitHub, reach a local HTTPS
 * receiver signed, with the decided envelope and data, and their history rows end `succeeded`;
 * fan-out goes only to the named endpoints that exist, are active and are subscribed, and the
 * aggregate status follows the deliveries (pending, delivering, partial, failed, no_targets).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type FakeGithub, startFakeGithub } from "../support/FakeGithub.ts"
import type { InProcessService } from "../support/Service.ts"
import { allHistory, createConnection, createTriggerEndpoint, history, ingestPath, postIngest, slackCallback, subscribe, type TriggerEventRow } from "../support/Triggers.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

const KEY = keyOf("p1")

interface Envelope {
  readonly id: string
  readonly type: string
  readonly createdAt: string
  readonly projectId: string
  readonly data: Record<string, unknown>
}

const suite = (name: string, env: () => Promise<Record<string, string>>, cleanup: () => Promise<void>) =>
  describe(name, () => {
    let service: InProcessService
    let receiver: Receiver
    let github: FakeGithub
    let close: () => Promise<void>

    beforeAll(async () => {
      github = await startFakeGithub()
      const started = await startMemoryWebhookService({
        ...(await env()),
        SERVICE_GITHUB_API_URL: github.url,
        SERVICE_TRIGGER_MIN_POLL_SECONDS: "1",
        SERVICE_RATE_LIMIT_REQUEST_BURST: "10000"
      })
      service = started.service
      receiver = started.receiver
      close = started.close
    })
    afterAll(async () => {
      await close()
      await github.close()
      await cleanup()
    })

    const rowOf = (subscriptionId: string, status: string) =>
      eventually(async () => {
        const rows = await history(service, `?subscriptionId=${subscriptionId}`, KEY)
        return rows[0]?.deliveryStatus === status ? rows[0] : undefined
      }, 15_000, `a ${status} row`)

    it("a Slack message posted to the ingest URL reaches the receiver signed, with the decided data; its row ends succeeded", async () => {
      const endpoint = await createTriggerEndpoint(service, receiver.url("/slack"), { key: KEY, events: ["trigger.slack.message_posted"] })
      const connection = await createConnection(service, { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb", signingSecret: "slack-secret" } }, KEY)
      const subscription = await subscribe(service, {
        trigger: "slack.message_posted", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpoint.endpointId], filters: { channel: "C1" }
      }, KEY)
      const callback = slackCallback("Ev0SLACK", { text: "deploy finished" })
      const answer = await postIngest(service, ingestPath(subscription), callback, { signingSecret: "slack-secret" })
      expect(await answer.json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      const request = await eventually(() => receiver.received.find((r) => r.path === "/slack"), 10_000, "the delivery")
      expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody).ok).toBe(true)
      const row = await rowOf(subscription.subscriptionId, "succeeded")
      const envelope = JSON.parse(request.rawBody) as Envelope
      expect(envelope).toEqual({
        id: row.eventId,
        type: "trigger.slack.message_posted",
        createdAt: row.receivedAt,
        projectId: "proj_p1",
        data: {
          subscriptionId: subscription.subscriptionId,
          eventId: row.eventId,
          trigger: "slack.message_posted",
          userId: "u1",
          connectionId: connection.connectionId,
          occurredAt: new Date(callback.event_time * 1000).toISOString(),
          payload: { channel: "C1", user: "U1", text: "deploy finished", ts: "1700000000.000100" }
        }
      })
      expect(request.headers["service-webhook-id"]).toBe(row.eventId)
      expect(row.deliveryTargets).toEqual([{ endpointId: endpoint.endpointId, deliveryId: expect.stringMatching(/^whd_/), status: "succeeded" }])
      const deliveries = (await (await service.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries`, { key: KEY })).json()) as {
        deliveries: Array<{ deliveryId: string; eventId: string; eventType: string; status: string }>
      }
      expect(deliveries.deliveries).toEqual([expect.objectContaining({
        deliveryId: row.deliveryTargets[0]?.deliveryId, eventId: row.eventId, eventType: "trigger.slack.message_posted", status: "succeeded"
      })])
    })

    it("an issue polled from GitHub reaches the receiver the same way", async () => {
      const endpoint = await createTriggerEndpoint(service, receiver.url("/github"), { key: KEY, events: ["trigger.github.issue_opened"] })
      const connection = await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "gh-token" } }, KEY)
      const subscription = await subscribe(service, {
        trigger: "github.issue_opened", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpoint.endpointId],
        filters: { owner: "octo", repo: "hello" }, pollIntervalSeconds: 1
      }, KEY)
      await eventually(() => (github.requests.length > 0 ? true : undefined), 10_000, "a first poll")
      const issue = github.addIssue({ title: "It broke", labels: ["bug"] })
      const request = await eventually(() => receiver.received.find((r) => r.path === "/github"), 15_000, "the delivery")
      expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody).ok).toBe(true)
      const row = await rowOf(subscription.subscriptionId, "succeeded")
      expect(row).toMatchObject({ deliveryMode: "polling", dedupStatus: "accepted", occurredAt: new Date(issue.created_at).toISOString() })
      const envelope = JSON.parse(request.rawBody) as Envelope
      expect(envelope.id).toBe(row.eventId)
      expect(envelope.type).toBe("trigger.github.issue_opened")
      expect(envelope.data).toEqual({
        subscriptionId: subscription.subscriptionId,
        eventId: row.eventId,
        trigger: "github.issue_opened",
        userId: "u1",
        connectionId: connection.connectionId,
        occurredAt: row.occurredAt,
        payload: {
          owner: "octo", repo: "hello", id: issue.id, number: issue.number, title: "It broke",
          url: `https://github.com/octo/hello/issues/${issue.number}`, user: "octocat", labels: ["bug"], createdAt: issue.created_at
        }
      })
    }, 30_000)

    it("fans out only to the named endpoints that exist, are active and are subscribed; the status follows them", async () => {
      const ok = await createTriggerEndpoint(service, receiver.url("/fan/ok"), { key: KEY, events: ["trigger.demo.event"] })
      const failing = await createTriggerEndpoint(service, receiver.url("/fan/fail"), { key: KEY })
      const inactive = await createTriggerEndpoint(service, receiver.url("/fan/inactive"), { key: KEY, active: false })
      const deleted = await createTriggerEndpoint(service, receiver.url("/fan/deleted"), { key: KEY })
      const unsubscribed = await createTriggerEndpoint(service, receiver.url("/fan/unsubscribed"), { key: KEY })
      const bystander = await createTriggerEndpoint(service, receiver.url("/fan/bystander"), { key: KEY })
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => { release = resolve })
      receiver.respond = (request) => {
        if (request.path === "/fan/fail") return { status: 500 }
        if (request.path === "/fan/ok") return { status: 200, hold: held }
        return { status: 200 }
      }
      const named = [ok.endpointId, failing.endpointId, inactive.endpointId, deleted.endpointId, unsubscribed.endpointId]
      const all = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: named }, KEY)
      const onlyInactive = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [inactive.endpointId] }, KEY)
      const onlyFailing = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [failing.endpointId] }, KEY)
      await service.fetch(`/v1/webhooks/${deleted.endpointId}`, { method: "DELETE", key: KEY })
      await service.fetch(`/v1/webhooks/${unsubscribed.endpointId}`, { method: "PATCH", key: KEY, json: { events: ["execution.completed"] } })
      const event = (id: string) => ({ type: "event_callback", event_id: id, event_time: 1_700_000_000, event: { type: "ping" } })
      for (const subscription of [all, onlyInactive, onlyFailing]) await postIngest(service, ingestPath(subscription), event(`Ev${subscription.subscriptionId}`))
      // The held receiver has the attempt in flight: no target has an attempt recorded yet.
      await eventually(() => receiver.received.find((r) => r.path === "/fan/ok"), 10_000, "the held attempt")
      const first = (await history(service, `?subscriptionId=${all.subscriptionId}`, KEY))[0]
      expect(first?.requestedWebhookEndpointIds).toEqual(named)
      expect(first?.deliveryTargets.map((target) => target.endpointId).toSorted()).toEqual([ok.endpointId, failing.endpointId].toSorted())
      expect(["pending", "delivering"]).toContain(first?.deliveryStatus)
      const delivering = await rowOf(all.subscriptionId, "delivering")
      expect(delivering.deliveryTargets.find((t) => t.endpointId === ok.endpointId)?.status).toBe("pending")
      release()
      const partial: TriggerEventRow = await rowOf(all.subscriptionId, "partial")
      expect(Object.fromEntries(partial.deliveryTargets.map((t) => [t.endpointId, t.status]))).toEqual({ [ok.endpointId]: "succeeded", [failing.endpointId]: "failed" })
      expect((await rowOf(onlyInactive.subscriptionId, "no_targets")).deliveryTargets).toEqual([])
      expect((await rowOf(onlyFailing.subscriptionId, "failed")).deliveryTargets).toHaveLength(1)
      for (const path of ["/fan/inactive", "/fan/deleted", "/fan/unsubscribed", "/fan/bystander"]) {
        expect(receiver.received.filter((r) => r.path === path), path).toEqual([])
      }
      expect(bystander.endpointId).toBeDefined()
      expect((await allHistory(service, "", KEY)).every((row) => row.deliveryStatus !== "selecting")).toBe(true)
    }, 30_000)
  })

suite("trigger delivery (memory)", async () => ({}), async () => {})

let databaseUrl: string | undefined
describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite(
    "trigger delivery (postgres)",
    async () => {
      databaseUrl = await createTestDatabase("trgdel")
      return { SERVICE_DATABASE_URL: databaseUrl, SERVICE_SECRET_KEY: Buffer.alloc(32, 9).toString("base64") }
    },
    async () => {
      if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
    }
  )
})
