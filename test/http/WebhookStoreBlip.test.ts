/**
 * A short outage of Postgres while a lane delivers (docs/webhooks.md: "If the store refuses an
 * attempt's record, the record is retried with backoff; the HTTP request is not sent again for it
 * while the process holds the endpoint's lease"). A real service process on a Postgres of the
 * test's own, stopped for a few seconds (well inside the 20 s lease) while a receiver that answers
 * slowly holds an attempt: every event still reaches the receiver once.
 *
 * Outside audit (2026-11-29): the lane's next store read failed during the outage, the lane
 * started over with its unwritten success records dropped, and sent the acknowledged event again.
 */
import { describe, expect, it } from "vitest"
import { ownPostgresAvailable } from "../support/OwnPostgres.ts"
import { useOwnPostgresService } from "../support/OwnPostgresService.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf } from "../support/Webhooks.ts"

describe.skipIf(!ownPostgresAvailable)("a short Postgres outage while a lane delivers (its own server, a real service process)", () => {
  const start = useOwnPostgresService()

  it("sends no acknowledged event again when the store comes back within the lease", async () => {
    const { postgres, receiver, service } = await start({ SERVICE_WEBHOOK_TIMEOUT_MS: "5000" }, () => ({ status: 200, delayMs: 1_500 }))
    const endpoint = await createEndpoint(service, "p1", receiver.url("/hook"))
    for (let i = 0; i < 3; i++) {
      const echo = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { i } } })
      expect(echo.status).toBe(200)
    }
    // The first attempt is at the receiver, which answers 1.5 s later: the store goes first.
    await eventually(() => receiver.received.length >= 1 || undefined, 20_000, "the first attempt")
    await postgres.stop()
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    await postgres.start()

    await eventually(async () => {
      const rows = await deliveriesOf(service, "p1", endpoint.endpointId).catch(() => [])
      return rows.length === 3 && rows.every((row) => row.status === "succeeded") || undefined
    }, 60_000, "three deliveries succeeded")
    // Past a sweep (5 s), which would wake a lane that still saw one open.
    await new Promise((resolve) => setTimeout(resolve, 7_000))
    const byEvent = new Map<string, number>()
    for (const request of receiver.received) {
      const id = request.headers["service-webhook-id"] ?? ""
      byEvent.set(id, (byEvent.get(id) ?? 0) + 1)
    }
    expect(byEvent.size).toBe(3)
    expect([...byEvent.values()]).toEqual([1, 1, 1])
  }, 180_000)
})
