/**
 * The trigger event history route (spec, "Trigger event history"): unpinned keys only, exact
 * filters, newest first with tamper-evident cursors, a swept anchor refused, nothing the spec
 * excludes; rows hidden 7 days after receivedAt and swept in batches of at most 1,000.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { arrivalCodec, arrivalStreamId, ARRIVAL_STREAM_TYPE, HISTORY_TTL_MS, type TriggerEventReceived } from "../../domain/triggers/TriggerEvent.ts"
import { type AppendRequest, EventStore } from "../../infra/eventlog/EventStore.ts"
import { newId } from "../../infra/Ids.ts"
import { TriggerHistory } from "../../infra/triggers/TriggerHistory.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { createConnection, createTriggerEndpoint, type CreatedSubscription, history, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"

const LIMITS = { SERVICE_RATE_LIMIT_REQUEST_BURST: "10000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000" }
const URL_OK = "https://93.184.215.14/hooks"
const ROW_FIELDS = [
  "arrivalId", "dedupStatus", "deliveryMode", "deliveryStatus", "deliveryTargets", "eventId", "expiresAt", "occurredAt", "receivedAt",
  "requestedWebhookEndpointIds", "subscriptionId", "trigger"
]

type Runtime = InProcessService["runtime"]

/** History rows received at `receivedAtMs`, straight into the log. */
const appendRows = async (runtime: Runtime, subscriptionId: string, count: number, receivedAtMs: number) => {
  const requests: Array<AppendRequest> = []
  for (let i = 0; i < count; i++) {
    const received: TriggerEventReceived = {
      type: "TriggerEventReceived",
      arrivalId: newId("trgevt"),
      eventId: newId("evt_trigger"),
      projectId: "proj_test",
      subscriptionId,
      userId: "u1",
      trigger: "demo.event",
      deliveryMode: "push",
      receivedAt: new Date(receivedAtMs + i).toISOString(),
      occurredAt: new Date(receivedAtMs).toISOString(),
      dedupStatus: "duplicate",
      requestedWebhookEndpointIds: []
    }
    requests.push({ streamId: arrivalStreamId(received.arrivalId), streamType: ARRIVAL_STREAM_TYPE, expectedVersion: 0, events: [arrivalCodec.encode(received, newId("evt"))] })
  }
  for (let i = 0; i < requests.length; i += 250) await runtime.runPromise(Effect.flatMap(EventStore, (store) => store.append(requests.slice(i, i + 250))))
}

const suite = (name: string, env: () => Promise<Record<string, string>>, cleanup: () => Promise<void>) =>
  describe(name, () => {
    let service: InProcessService
    let runtime: Runtime
    let endpointId: string
    let demo: CreatedSubscription
    let slack: CreatedSubscription

    beforeAll(async () => {
      service = await startService({ ...LIMITS, ...(await env()) })
      runtime = service.runtime
      endpointId = (await createTriggerEndpoint(service, URL_OK, { active: false })).endpointId
      demo = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId], filters: { type: "filterMarker" } })
      const connection = await createConnection(service, { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb-credential", signingSecret: "signing-marker" } })
      slack = await subscribe(service, { trigger: "slack.message_posted", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpointId] })
      for (let i = 0; i < 5; i++) {
        await postIngest(service, ingestPath(demo), { type: "event_callback", event_id: `EvMarker${i}`, event_time: 1_700_000_000 + i, event: { type: "filterMarker", text: "PAYLOAD_MARKER" } })
      }
      await postIngest(service, ingestPath(slack), {
        type: "event_callback", event_id: "EvSlackMarker", event_time: 1_700_000_000,
        event: { type: "message", channel: "C1", user: "U1", text: "MESSAGE_MARKER", ts: "1.0" }
      }, { signingSecret: "signing-marker" })
    })
    afterAll(async () => {
      await service.close()
      await cleanup()
    })

    it("answers exactly the spec's fields, newest first, and nothing the spec excludes", async () => {
      const response = await service.fetch(`/v1/trigger-events`)
      const text = await response.text()
      const rows = (JSON.parse(text) as { triggerEvents: Array<Record<string, unknown>> }).triggerEvents
      expect(rows.length).toBeGreaterThanOrEqual(6)
      for (const row of rows) expect(Object.keys(row).toSorted()).toEqual(ROW_FIELDS)
      const received = rows.map((row) => String(row.receivedAt))
      expect(received).toEqual(received.toSorted().toReversed())
      for (const excluded of ["PAYLOAD_MARKER", "MESSAGE_MARKER", "EvMarker", "EvSlackMarker", "filterMarker", "trgsec_", "93.184.215.14", "signing-marker", "xoxb-credential", "whsec_"]) {
        expect(text, excluded).not.toContain(excluded)
      }
      expect(rows[0]).toMatchObject({ subscriptionId: slack.subscriptionId, trigger: "slack.message_posted", deliveryMode: "push" })
      expect(String(rows[0]?.expiresAt)).toBe(new Date(Date.parse(String(rows[0]?.receivedAt)) + HISTORY_TTL_MS).toISOString())
    })

    it("filters by subscription and trigger, exactly", async () => {
      const bySubscription = await history(service, `?subscriptionId=${demo.subscriptionId}`)
      expect(bySubscription).toHaveLength(5)
      expect(bySubscription.every((row) => row.subscriptionId === demo.subscriptionId)).toBe(true)
      expect(await history(service, "?trigger=slack.message_posted")).toHaveLength(1)
      expect(await history(service, `?trigger=demo.event&subscriptionId=${slack.subscriptionId}`)).toHaveLength(0)
      for (const query of ["?trigger=demo", "?trigger=demo__event", "?subscriptionId=trgsub_x", "?subscriptionId=whe_1", "?userId=u1", "?limit=0", "?limit=101", "?limit=x"]) {
        const refused = await service.fetch(`/v1/trigger-events${query}`)
        expect(refused.status, query).toBe(422)
      }
    })

    it("pages with cursors bound to the project and the filters", async () => {
      const query = `subscriptionId=${demo.subscriptionId}`
      const first = (await (await service.fetch(`/v1/trigger-events?${query}&limit=2`)).json()) as { triggerEvents: Array<{ arrivalId: string }>; nextCursor: string }
      const second = (await (await service.fetch(`/v1/trigger-events?${query}&limit=2&cursor=${encodeURIComponent(first.nextCursor)}`)).json()) as typeof first
      const third = (await (await service.fetch(`/v1/trigger-events?${query}&limit=2&cursor=${encodeURIComponent(second.nextCursor)}`)).json()) as typeof first
      const all = (await history(service, `?${query}`)).map((row) => row.arrivalId)
      expect([...first.triggerEvents, ...second.triggerEvents, ...third.triggerEvents].map((row) => row.arrivalId)).toEqual(all)
      expect(third.nextCursor).toBeUndefined()
      for (const bad of [`${first.nextCursor}x`, "x.y", first.nextCursor.replace(/^./, "A")]) {
        expect((await service.fetch(`/v1/trigger-events?${query}&cursor=${encodeURIComponent(bad)}`)).status, bad).toBe(422)
      }
      // Another list (no filter), another project: the same cursor is refused.
      expect((await service.fetch(`/v1/trigger-events?cursor=${encodeURIComponent(first.nextCursor)}`)).status).toBe(422)
      expect((await service.fetch(`/v1/trigger-events?${query}&cursor=${encodeURIComponent(first.nextCursor)}`, { key: OTHER_KEY })).status).toBe(422)
    })

    it("refuses pinned keys and hides other projects' rows", async () => {
      const pinned = await service.fetch("/v1/trigger-events", { key: PINNED_KEY })
      expect(pinned.status).toBe(403)
      expect(((await pinned.json()) as { error: { code: string } }).error.code).toBe("auth_insufficient_scope")
      expect(await history(service, "", OTHER_KEY)).toEqual([])
      expect((await service.fetch("/v1/trigger-events", { key: null })).status).toBe(401)
    })

    it("hides rows 7 days after receivedAt, sweeps them in batches of at most 1,000, and refuses a swept anchor", async () => {
      const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      const id = subscription.subscriptionId
      await appendRows(runtime, id, 1_500, Date.now() - HISTORY_TTL_MS - 60_000)
      await appendRows(runtime, id, 3, Date.now() - HISTORY_TTL_MS + 1_500)
      const visible = await history(service, `?subscriptionId=${id}`)
      expect(visible).toHaveLength(3)
      const page = (await (await service.fetch(`/v1/trigger-events?subscriptionId=${id}&limit=1`)).json()) as { nextCursor: string }
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      expect(await history(service, `?subscriptionId=${id}`)).toHaveLength(0)
      const sweep = () => runtime.runPromise(Effect.flatMap(TriggerHistory, (h) => h.sweep))
      const batches = [await sweep(), await sweep(), await sweep()]
      expect(batches[0]).toBe(1_000)
      expect(batches[1]! + batches[2]!).toBe(503)
      expect(await sweep()).toBe(0)
      const refused = await service.fetch(`/v1/trigger-events?subscriptionId=${id}&limit=1&cursor=${encodeURIComponent(page.nextCursor)}`)
      expect(refused.status).toBe(422)
    }, 60_000)
  })

suite("trigger events (memory)", async () => ({}), async () => {})

let databaseUrl: string | undefined
describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite(
    "trigger events (postgres)",
    async () => {
      databaseUrl = await createTestDatabase("hist")
      return { SERVICE_DATABASE_URL: databaseUrl, SERVICE_SECRET_KEY: Buffer.alloc(32, 8).toString("base64") }
    },
    async () => {
      if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
    }
  )
})
