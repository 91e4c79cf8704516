/**
 * Deactivation stops unfinished work (spec, "Delivery rules" 5 and the delivery table:
 * "unfinished | endpoint deactivated or deleted | no further attempts"; docs/webhooks.md:
 * "re-activating does not resurrect them"). Outside audit: switched off and on again while an
 * attempt was in flight, the lane never saw the endpoint inactive, and the whole backlog went out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { InProcessService } from "../support/Service.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

describe("an endpoint switched off and on again", () => {
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void>
  beforeAll(async () => {
    ;({ service, receiver, close } = await startMemoryWebhookService({ SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,1000,1000,1000,1000", SERVICE_RATE_LIMIT_REQUEST_BURST: "100000" }))
  })
  afterAll(() => close())

  const seqs = (path: string) =>
    receiver.received.filter((request) => request.path === path).map((request) => (JSON.parse(request.rawBody) as { data: { output: { seq: number } } }).data.output.seq)

  it("sends nothing more of what was unfinished when it was switched off, and what comes after", async () => {
    const key = keyOf("p4")
    const endpoint = await createEndpoint(service, "p4", receiver.url("/flip"), ["execution.succeeded"])
    let failing = true
    receiver.respond = (request) => (request.path === "/flip" && failing ? { status: 500, delayMs: 1_500 } : { status: 200 })
    for (const seq of [1, 2, 3]) {
      const executed = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { seq } } })
      expect(executed.status).toBe(200)
    }
    // The first attempt is in flight (the receiver answers after 1.5 s): off and on again.
    await eventually(() => (seqs("/flip").length === 1 ? true : undefined), 5_000, "the first attempt")
    const patch = (active: boolean) => service.fetch(`/v1/webhooks/${endpoint.endpointId}`, { method: "PATCH", key, json: { active } })
    expect((await patch(false)).status).toBe(200)
    expect((await patch(true)).status).toBe(200)
    failing = false
    // What was unfinished at the switch-off is failed, with no further attempt.
    const stopped = await eventually(async () => {
      const listed = await deliveriesOf(service, "p4", endpoint.endpointId)
      return listed.length === 3 && listed.every((d) => d.status === "failed") ? listed : undefined
    }, 10_000, "the backlog to be stopped")
    expect(stopped.map((d) => d.attempts.length).toSorted()).toEqual([0, 0, 1])
    // An event after the reactivation is delivered.
    expect((await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { seq: 4 } } })).status).toBe(200)
    await eventually(() => (seqs("/flip").includes(4) ? true : undefined), 10_000, "the event after the reactivation")
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(seqs("/flip")).toEqual([1, 4])
  }, 30_000)
})
