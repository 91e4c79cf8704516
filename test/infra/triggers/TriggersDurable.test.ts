/**
 * Triggers across restarts and processes on one Postgres: unfinished trigger deliveries fail
 * `payload_unavailable` after a kill -9 while execution deliveries resume; an accepted arrival
 * whose process died before its fan-out fails admission; duplicates split across two processes
 * make one accepted row; dedup claims outlive a restart and go with their subscription; exactly
 * one process polls a subscription, a kill -9 of it hands the poller over, and the cadence holds
 * across a restart.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { arrivalCodec, arrivalStreamId, ARRIVAL_STREAM_TYPE } from "../../../domain/triggers/TriggerEvent.ts"
import { EventStore } from "../../../infra/eventlog/EventStore.ts"
import { newId } from "../../../infra/Ids.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../support/Database.ts"
import { appendTerminal, pgLog } from "../../support/Executions.ts"
import { type FakeGithub, startFakeGithub } from "../../support/FakeGithub.ts"
import { type ChildService, startPeers, startProcess } from "../../support/Service.ts"
import { allHistory, createConnection, createTriggerEndpoint, history, ingestPath, postIngest, subscribe } from "../../support/Triggers.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../../support/WebhookReceiver.ts"
import { deliveriesOf, freePort, keyOf, serviceEnv } from "../../support/Webhooks.ts"

const URL_OK = "https://93.184.215.14/hooks"
const ping = (eventId: string) => ({ type: "event_callback", event_id: eventId, event_time: 1_700_000_000, event: { type: "ping" } })

describe.skipIf(!postgresAvailable)("triggers on Postgres, across restarts and processes", () => {
  let certificate: Certificate
  let receiver: Receiver
  let github: FakeGithub
  const databases: Array<string> = []
  const services: Array<ChildService> = []

  beforeAll(async () => {
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    github = await startFakeGithub()
  })
  afterAll(async () => {
    for (const service of services) if (service.process.exitCode === null) await service.kill9()
    await receiver.close()
    await github.close()
    for (const url of databases) await dropTestDatabase(url)
  })

  const database = async (prefix: string) => {
    const url = await createTestDatabase(prefix)
    databases.push(url)
    return url
  }
  const start = async (env: Record<string, string>) => {
    const service = await startProcess(env, await freePort())
    services.push(service)
    return service
  }

  /** A process on a database of its own with a github.issue_opened subscription of `project` (an inactive endpoint). */
  const startPolling = async (prefix: string, project: string, pollIntervalSeconds: number) => {
    const url = await database(prefix)
    const env = serviceEnv(url, certificate, { SERVICE_GITHUB_API_URL: github.url, SERVICE_TRIGGER_MIN_POLL_SECONDS: "1" })
    const service = await start(env)
    const endpoint = await createTriggerEndpoint(service, URL_OK, { key: keyOf(project), active: false })
    const connection = await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "gh-token" } }, keyOf(project))
    const subscription = await subscribe(service, {
      trigger: "github.issue_opened", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpoint.endpointId],
      filters: { owner: "octo", repo: "hello" }, pollIntervalSeconds
    }, keyOf(project))
    return { url, env, service, subscription }
  }

  it("after kill -9, unfinished trigger deliveries fail payload_unavailable; execution deliveries resume", async () => {
    const url = await database("trgrst")
    const env = serviceEnv(url, certificate, { SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,1500,1500,1500,1500" })
    const first = await start(env)
    const log = pgLog(url)
    try {
      receiver.respond = (request) => (request.path.startsWith("/restart") ? { status: 503 } : { status: 200 })
      const endpoint = await createTriggerEndpoint(first, receiver.url("/restart"), { key: keyOf("p1"), events: ["trigger.*", "execution.completed"] })
      const subscription = await subscribe(first, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] }, keyOf("p1"))
      expect((await postIngest(first, ingestPath(subscription), ping("EvRestart"))).status).toBe(202)
      const execution = await log.runPromise(appendTerminal("proj_p1", "succeeded"))
      await eventually(async () => {
        const records = await deliveriesOf(first, "p1", endpoint.endpointId)
        // The trigger delivery heads the lane, waiting for its retry; the execution's waits behind it.
        return records.length === 2 && records.some((r) => r.eventType === "trigger.demo.event" && r.nextRetryAt !== undefined) ? true : undefined
      }, 15_000, "the trigger delivery waiting for a retry, the execution's queued")
      await first.kill9()
      receiver.respond = () => ({ status: 200 })
      const second = await start(env)
      const records = await eventually(async () => {
        const found = await deliveriesOf(second, "p1", endpoint.endpointId)
        return found.length === 2 && found.every((r) => r.status === "succeeded" || r.status === "failed") ? found : undefined
      }, 30_000, "both deliveries finished")
      const trigger = records.find((r) => r.eventType === "trigger.demo.event")
      const executionDelivery = records.find((r) => r.eventId === execution.eventId)
      expect(trigger?.status).toBe("failed")
      expect(trigger?.attempts.at(-1)).toEqual({ attemptedAt: expect.any(String), error: "payload_unavailable" })
      expect(executionDelivery?.status).toBe("succeeded")
      const row = (await history(second, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p1")))[0]
      expect(row?.deliveryStatus).toBe("failed")
      // Its payload is gone: it cannot be resent (409), and recover skips it.
      const resend = await second.fetch(`/v1/webhooks/${endpoint.endpointId}/deliveries/${trigger?.deliveryId}/resend`, { method: "POST", key: keyOf("p1") })
      expect(resend.status).toBe(409)
      expect(((await resend.json()) as { error: { message: string } }).error.message).toContain("payload is kept only by the process that received it")
      const recovered = await second.fetch(`/v1/webhooks/${endpoint.endpointId}/recover`, { method: "POST", key: keyOf("p1"), json: { since: "2020-01-01T00:00:00Z" } })
      expect(await recovered.json()).toEqual({ count: 0 })
      // The dedup claim outlived the restart.
      expect(await (await postIngest(second, ingestPath(subscription), ping("EvRestart"))).json()).toEqual({ kind: "accepted", accepted: 0, duplicates: 1 })
      await second.stop()
    } finally {
      await log.dispose()
    }
  }, 90_000)

  it("an accepted arrival whose process died before its fan-out fails admission", async () => {
    const url = await database("trgadm")
    const service = await start(serviceEnv(url, certificate))
    const log = pgLog(url)
    try {
      const endpoint = await createTriggerEndpoint(service, URL_OK, { key: keyOf("p2"), active: false })
      const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] }, keyOf("p2"))
      const arrivalId = newId("trgevt")
      const now = new Date().toISOString()
      await log.runPromise(Effect.flatMap(EventStore, (store) => store.append([{
        streamId: arrivalStreamId(arrivalId),
        streamType: ARRIVAL_STREAM_TYPE,
        expectedVersion: 0,
        events: [arrivalCodec.encode({
          type: "TriggerEventReceived", arrivalId, eventId: newId("evt_trigger"), projectId: "proj_p2", subscriptionId: subscription.subscriptionId,
          userId: "u1", trigger: "demo.event", deliveryMode: "push", receivedAt: now, occurredAt: now, dedupStatus: "accepted",
          requestedWebhookEndpointIds: [endpoint.endpointId], owner: "run_gone"
        }, newId("evt"))]
      }])))
      const row = await eventually(async () => {
        const rows = await history(service, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p2"))
        return rows[0]?.deliveryStatus === "admission_failed" ? rows[0] : undefined
      }, 15_000, "admission_failed")
      expect(row.deliveryTargets).toEqual([])
      await service.stop()
    } finally {
      await log.dispose()
    }
  }, 60_000)

  it("duplicates arriving at two processes at once make one accepted row; deleting the subscription removes its claims", async () => {
    const url = await database("trgdup")
    const [a, b] = await startPeers(serviceEnv(url, certificate))
    services.push(a, b)
    const endpoint = await createTriggerEndpoint(a, URL_OK, { key: keyOf("p3"), active: false })
    const subscription = await subscribe(a, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] }, keyOf("p3"))
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) =>
        postIngest(i % 2 === 0 ? a : b, ingestPath(subscription), ping(`EvTwo${round}`)).then((r) => r.json() as Promise<{ accepted: number; duplicates: number }>)))
      expect(answers.reduce((n, x) => n + x.accepted, 0)).toBe(1)
      expect(answers.reduce((n, x) => n + x.duplicates, 0)).toBe(9)
    }
    const rows = await allHistory(b, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p3"))
    expect(rows).toHaveLength(30)
    expect(rows.filter((row) => row.dedupStatus === "accepted")).toHaveLength(3)
    expect(new Set(rows.map((row) => row.eventId)).size).toBe(3)
    const claims = () => runSql<{ n: string }>(url, `SELECT count(*)::text AS n FROM trigger_dedup_claims WHERE subscription_id = '${subscription.subscriptionId}'`)
    expect((await claims())[0]?.n).toBe("3")
    expect((await b.fetch(`/v1/subscriptions/${subscription.subscriptionId}`, { method: "DELETE", key: keyOf("p3") })).status).toBe(204)
    expect((await claims())[0]?.n).toBe("0")
    expect(await allHistory(a, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p3"))).toHaveLength(30)
    await a.stop()
    await b.stop()
  }, 60_000)

  it("two processes: events taken by either reach one endpoint, whichever process runs its lane (the lane goes where the payload is)", async () => {
    const url = await database("trgtwo")
    const [a, b] = await startPeers(serviceEnv(url, certificate))
    services.push(a, b)
    receiver.respond = () => ({ status: 200 })
    const endpoint = await createTriggerEndpoint(a, receiver.url("/two-processes"), { key: keyOf("p6") })
    const subscription = await subscribe(a, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] }, keyOf("p6"))
    for (let i = 0; i < 12; i++) {
      expect((await postIngest(i % 2 === 0 ? a : b, ingestPath(subscription), ping(`EvBoth${i}`))).status).toBe(202)
      await new Promise((resolve) => setTimeout(resolve, 150))
    }
    const records = await eventually(async () => {
      const found = await deliveriesOf(a, "p6", endpoint.endpointId)
      return found.length === 12 && found.every((r) => r.status === "succeeded" || r.status === "failed") ? found : undefined
    }, 60_000, "twelve finished deliveries")
    expect(records.filter((r) => r.status !== "succeeded")).toEqual([])
    expect(new Set(receiver.received.filter((r) => r.path === "/two-processes").map((r) => r.headers["service-webhook-id"])).size).toBe(12)
    const rows = await allHistory(b, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p6"))
    expect(rows.map((row) => row.deliveryStatus)).toEqual(Array.from({ length: 12 }, () => "succeeded"))
    await a.stop()
    await b.stop()
  }, 90_000)

  it("two processes: exactly one polls a subscription; a kill -9 of it hands the poller over; no request or event twice", async () => {
    const url = await database("trgpoll")
    const env = serviceEnv(url, certificate, { SERVICE_GITHUB_API_URL: github.url, SERVICE_TRIGGER_MIN_POLL_SECONDS: "1" })
    const [a, b] = await startPeers(env)
    services.push(a, b)
    receiver.respond = () => ({ status: 200 })
    const endpoint = await createTriggerEndpoint(a, receiver.url("/poll"), { key: keyOf("p4"), events: ["trigger.github.issue_opened"] })
    const connection = await createConnection(a, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "gh-token" } }, keyOf("p4"))
    const subscription = await subscribe(a, {
      trigger: "github.issue_opened", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpoint.endpointId],
      filters: { owner: "octo", repo: "hello" }, pollIntervalSeconds: 1
    }, keyOf("p4"))
    const since = github.requests.length
    const issues: Array<{ readonly id: number }> = []
    for (let i = 0; i < 4; i++) {
      issues.push(github.addIssue({ title: `before the kill ${i}` }))
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    }
    // Delivered before the kill: a payload is lost with its process (payload_unavailable), which is not this test's point.
    await eventually(() => (receiver.received.filter((r) => r.path === "/poll").length >= issues.length ? true : undefined), 15_000, "the first deliveries")
    // The process holding the lease is the one polling: kill it.
    const holder = await runSql<{ pid: number }>(url, `SELECT r.pid FROM actor_leases l JOIN runners r USING (runner_id) WHERE l.lease_key = 'trigger-poller/${subscription.subscriptionId}'`)
    const victim = [a, b].find((service) => service.process.pid === Number(holder[0]?.pid))
    expect(victim).toBeDefined()
    const survivor = victim === a ? b : a
    await victim!.kill9()
    for (let i = 0; i < 4; i++) {
      issues.push(github.addIssue({ title: `after the kill ${i}` }))
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    }
    const rows = await eventually(async () => {
      const found = await allHistory(survivor, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p4"))
      return found.length >= issues.length ? found : undefined
    }, 30_000, "every issue")
    await eventually(() => (receiver.received.filter((r) => r.path === "/poll").length >= issues.length ? true : undefined), 15_000, "every delivery")
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    expect(await allHistory(survivor, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p4"))).toHaveLength(issues.length)
    expect(rows.every((row) => row.dedupStatus === "accepted")).toBe(true)
    const delivered = receiver.received.filter((r) => r.path === "/poll").map((r) => JSON.parse(r.rawBody) as { data: { payload: { id: number } } })
    expect(delivered.map((d) => d.data.payload.id).toSorted()).toEqual(issues.map((issue) => issue.id).toSorted())
    // One poller at a time: consecutive first-page requests are never closer than the cadence allows.
    const firstPages = github.requests.slice(since).filter((request) => request.query.page === undefined).map((request) => request.at)
    const gaps = firstPages.slice(1).map((at, i) => at - firstPages[i]!)
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(900)
    await survivor.stop()
  }, 120_000)

  it("an issue edited after its dedup claim expired is not delivered again", async () => {
    // Outside audit: claims last 24 h; the newest issue of a quiet repository, edited later than
    // that, was delivered again as opened, under a new event id.
    const { url, service, subscription } = await startPolling("trgedit", "p6", 1)
    const issue = github.addIssue({ title: "opened once" })
    const rows = () => allHistory(service, `?subscriptionId=${subscription.subscriptionId}`, keyOf("p6"))
    await eventually(async () => ((await rows()).length === 1 ? true : undefined), 15_000, "the issue")
    // A day passes: the claim expires.
    const expired = await runSql(url, `UPDATE trigger_dedup_claims SET expires_at = now() - interval '1 second'
      WHERE subscription_id = '${subscription.subscriptionId}'`)
    expect(expired).toBeDefined()
    github.touch(issue)
    const asked = github.requests.length
    await eventually(() => (github.requests.filter((request, i) => i >= asked && request.status === 200).length >= 2 ? true : undefined), 15_000, "polls that list the edit")
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect((await rows()).map((row) => row.dedupStatus)).toEqual(["accepted"])
    await service.stop()
  }, 60_000)

  it("the cadence holds across a restart", async () => {
    const before = github.requests.length
    const { env, service: first } = await startPolling("trgcad", "p5", 8)
    await eventually(() => (github.requests.length > before ? true : undefined), 10_000, "the first poll")
    const polledAt = github.requests.at(-1)!.at
    // A clean stop hands the lease over at once: only the saved next poll time makes the new process wait.
    await first.stop()
    const second = await start(env)
    await eventually(() => (github.requests.length > before + 1 ? true : undefined), 30_000, "the next poll")
    const next = github.requests[before + 1]!.at
    expect(next - polledAt).toBeGreaterThanOrEqual(7_500)
    await second.stop()
  }, 60_000)
})
