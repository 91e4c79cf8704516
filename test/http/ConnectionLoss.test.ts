/**
 * Lost connections do not lose ownership (issue "Hardening", findings 2 and 3): two service
 * processes on one Postgres run executions and deliver webhooks while every backend they hold is
 * terminated again and again. No execution is failed as interrupted while it runs (its owner's
 * lease survives), every accepted execution succeeds, and the receiver never sees an event
 * again after a later one (no lane ran in two processes at once).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type ChildService, startPeers } from "../support/Service.ts"
import { createEndpoint, deliveriesOf, keyOf, serviceEnv } from "../support/Webhooks.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"

describe.skipIf(!postgresAvailable)("terminated backends under load", () => {
  let url: string
  let certificate: Certificate
  let receiver: Receiver
  let peers: readonly [ChildService, ChildService]

  beforeAll(async () => {
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    url = await createTestDatabase("connloss")
    peers = await startPeers(serviceEnv(url, certificate, { SERVICE_RATE_LIMIT_EXECUTE_BURST: "1000", SERVICE_RATE_LIMIT_REQUEST_BURST: "5000" }))
  }, 60_000)
  afterAll(async () => {
    for (const peer of peers ?? []) await peer.stop().catch(() => undefined)
    await receiver?.close()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("no execution is interrupted while it runs, all succeed, and no receiver sees an event after a later one", async () => {
    const endpoint = await createEndpoint(peers[0], "p1", receiver.url("/loss"))
    receiver.respond = () => ({ status: 200 })
    const killing = { on: true }
    let killed = 0
    const killer = (async () => {
      while (killing.on) {
        const rows = await runSql<{ killed: boolean }>(url, `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'service'`).catch(() => [])
        killed += rows.length
        await new Promise((resolve) => setTimeout(resolve, 300))
      }
    })()
    const accepted: Array<string> = []
    const started = Date.now()
    let i = 0
    while (Date.now() - started < 8_000) {
      const peer = peers[i++ % 2]!
      const response = await peer.fetch("/v1/execute", {
        method: "POST",
        key: keyOf("p1"),
        json: { tool: "demo.sleep", input: { ms: 200 }, userId: "u1", mode: "async" }
      }).catch(() => undefined)
      // A request whose own statement lost its connection is refused (500); it created nothing.
      if (response?.status === 202) accepted.push(((await response.json()) as { executionId: string }).executionId)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    killing.on = false
    await killer
    expect(killed).toBeGreaterThan(20)
    expect(accepted.length).toBeGreaterThan(20)

    for (const executionId of accepted) {
      const record = await eventually(async () => {
        const answer = await peers[1].fetch(`/v1/executions/${executionId}`, { key: keyOf("p1") })
        const body = (await answer.json()) as { status: string; error?: { code: string } }
        return body.status === "succeeded" || body.status === "failed" || body.status === "cancelled" ? body : undefined
      }, 60_000, `execution ${executionId}`)
      expect(record, executionId).toMatchObject({ status: "succeeded" })
    }

    const records = await eventually(async () => {
      const all = await deliveriesOf(peers[1], "p1", endpoint.endpointId)
      return all.length === accepted.length && all.every((r) => r.status === "succeeded") ? all : undefined
    }, 60_000, "every delivery")
    expect(records).toHaveLength(accepted.length)
    // Seen in some order; once a later event has arrived, an earlier one never comes back.
    const ids = receiver.received.filter((r) => r.path === "/loss").map((r) => r.headers["service-webhook-id"])
    const rank = new Map<string | undefined, number>()
    for (const id of ids) if (!rank.has(id)) rank.set(id, rank.size)
    let highest = -1
    for (const id of ids) {
      const mine = rank.get(id)!
      expect(mine, `event ${id} was seen again after a later event`).toBeGreaterThanOrEqual(highest)
      highest = Math.max(highest, mine)
    }
  }, 180_000)
})
