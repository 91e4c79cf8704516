/**
 * Webhook delivery across crashes and processes on one Postgres: kill -9 while deliveries are
 * queued, in flight and waiting for a retry, then restart; and two service processes delivering
 * one at a time per endpoint, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../../client/Webhooks.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"
import { appendTerminal, pgLog } from "../../support/Executions.ts"
import { type ChildService, startPeers, startProcess } from "../../support/Service.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, freePort, serviceEnv } from "../../support/Webhooks.ts"

const idOf = (r: { headers: Readonly<Record<string, string>> }) => r.headers["service-webhook-id"]

describe.skipIf(!postgresAvailable)("webhook durability", () => {
  let certificate: Certificate
  let receiver: Receiver
  const databases: Array<string> = []
  const services: Array<ChildService> = []

  beforeAll(async () => {
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
  })
  afterAll(async () => {
    for (const service of services) if (service.process.exitCode === null) await service.kill9()
    await receiver.close()
    for (const url of databases) await dropTestDatabase(url)
  })

  it("after kill -9 every queued, in-flight and retry-waiting delivery completes", async () => {
    const databaseUrl = await createTestDatabase("whk")
    databases.push(databaseUrl)
    const env = serviceEnv(databaseUrl, certificate, { SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,1500,1500,1500,1500", SERVICE_WEBHOOK_TIMEOUT_MS: "5000" })
    const first = await startProcess(env, await freePort())
    services.push(first)
    const log = pgLog(databaseUrl)
    try {
      const held = await createEndpoint(first, "p1", receiver.url("/k/held"))
      const flaky = await createEndpoint(first, "p1", receiver.url("/k/flaky"))
      const never = new Promise<void>(() => {})
      receiver.respond = (request) => {
        if (request.path === "/k/held") return { status: 200, hold: never }
        if (request.path === "/k/flaky") return { status: 500 }
        return { status: 404 }
      }
      const events = []
      for (let i = 0; i < 3; i++) events.push(await log.runPromise(appendTerminal("proj_p1", "succeeded")))
      const at = (path: string) => receiver.received.filter((r) => r.path === path)
      // The head of /held is in flight, its followers queued; the head of /flaky waits for a retry.
      await eventually(() => (at("/k/held").length === 1 && at("/k/flaky").length === 1 && at("/k/flaky")[0]!.answeredAt ? true : undefined))
      // Killed only once the failed attempt is recorded (a retry time is set): before that, the
      // attempt is still in flight for the service, and a restart rightly sends it again at once.
      await eventually(async () => ((await deliveriesOf(first, "p1", flaky.endpointId)).some((r) => r.nextRetryAt !== undefined) ? true : undefined))
      const failedAt = at("/k/flaky")[0]!.answeredAt!
      await first.kill9()
      // Appended while no service runs: the dispatcher picks it up from its checkpoint.
      events.push(await log.runPromise(appendTerminal("proj_p1", "failed")))
      receiver.respond = () => ({ status: 200 })

      const second = await startProcess(env, await freePort())
      services.push(second)
      for (const endpoint of [held, flaky]) {
        await eventually(async () => {
          const records = await deliveriesOf(second, "p1", endpoint.endpointId)
          return records.length === 4 && records.every((r) => r.status === "succeeded") ? records : undefined
        }, 20_000, `deliveries of ${endpoint.endpointId}`)
      }
      const eventIds = events.map((e) => e.eventId)
      for (const [path, endpoint] of [["/k/held", held], ["/k/flaky", flaky]] as const) {
        const requests = at(path)
        for (const id of eventIds) expect(requests.some((r) => idOf(r) === id)).toBe(true)
        for (const request of requests) expect(verifyWebhook(endpoint.secret, request.headers, request.rawBody).ok).toBe(true)
        // First deliveries of each event arrive in log order, even across the restart.
        const firstSeen = [...new Set(requests.map(idOf))]
        expect(firstSeen).toEqual(eventIds)
      }
      // The retry time held across the restart: no second attempt before failure + 1.5 s.
      const retry = at("/k/flaky").filter((r) => idOf(r) === eventIds[0])[1]!
      expect(retry.at - failedAt).toBeGreaterThanOrEqual(1_400)
      expect(receiver.received.filter((r) => r.path.startsWith("/k/") && r.headers["service-webhook-signature"] === undefined)).toEqual([])
      await second.stop()
    } finally {
      await log.dispose()
    }
  }, 90_000)

  it("two processes on one database deliver one at a time per endpoint, in order", async () => {
    const databaseUrl = await createTestDatabase("wh2")
    databases.push(databaseUrl)
    const env = serviceEnv(databaseUrl, certificate)
    const [a, b] = await startPeers(env)
    services.push(a, b)
    const log = pgLog(databaseUrl)
    try {
      const endpoints = [await createEndpoint(a, "p2", receiver.url("/two/0")), await createEndpoint(b, "p2", receiver.url("/two/1"))]
      const inFlight = new Map<string, number>()
      let overlap = 0
      receiver.respond = (request) => {
        if (!request.path.startsWith("/two/")) return { status: 200 }
        const now = (inFlight.get(request.path) ?? 0) + 1
        inFlight.set(request.path, now)
        if (now > 1) overlap++
        return {
          status: 200,
          hold: new Promise<void>((resolve) => setTimeout(() => {
            inFlight.set(request.path, (inFlight.get(request.path) ?? 1) - 1)
            resolve()
          }, 15))
        }
      }
      const events = []
      for (let i = 0; i < 20; i++) events.push(await log.runPromise(appendTerminal("proj_p2", i % 2 === 0 ? "succeeded" : "failed")))
      // A takes a turn at being gone: the other process takes over its lanes.
      await eventually(() => (receiver.received.filter((r) => r.path.startsWith("/two/")).length >= 10 ? true : undefined), 20_000)
      await a.kill9()
      for (let i = 0; i < 10; i++) events.push(await log.runPromise(appendTerminal("proj_p2", "succeeded")))
      for (const endpoint of endpoints) {
        await eventually(async () => {
          const records = await deliveriesOf(b, "p2", endpoint.endpointId)
          return records.length === 30 && records.every((r) => r.status === "succeeded") ? true : undefined
        }, 30_000, "all deliveries")
      }
      expect(overlap).toBe(0)
      for (const path of ["/two/0", "/two/1"]) {
        const firstSeen = [...new Set(receiver.received.filter((r) => r.path === path).map(idOf))]
        expect(firstSeen).toEqual(events.map((e) => e.eventId))
      }
      await b.stop()
    } finally {
      await log.dispose()
    }
  }, 120_000)
})
