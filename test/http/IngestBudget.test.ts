/**
 * One project's ingest URL cannot take the process from the others (docs/triggers.md, "Ingest
 * budget"). Ingest reads no API key, so the project rate limits never applied to it. Outside
 * audit: two clients posting 1 MB events to one project's ingest URL (about 6 MB/s) made every
 * other project's requests 20-40 times slower. Accepted bodies now draw on a budget of bytes per
 * project and process; past it, 429 `rate_limited` with Retry-After, and other projects' ingest
 * goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, OTHER_KEY, startService } from "../support/Service.ts"
import { createTriggerEndpoint, type CreatedSubscription, ingestPath, postIngest, subscribe } from "../support/Triggers.ts"

const MIB = 1024 * 1024

const event = (id: string, size: number) => ({
  type: "event_callback",
  event_id: id,
  event_time: Math.floor(Date.now() / 1000),
  event: { type: "ping", blob: "x".repeat(size) }
})

describe("the ingest budget", () => {
  let service: InProcessService
  let noisy: CreatedSubscription
  let quiet: CreatedSubscription
  beforeAll(async () => {
    service = await startService({ SERVICE_INGEST_BYTES_PER_MINUTE: String(6 * MIB), SERVICE_INGEST_BURST_BYTES: String(3 * MIB) })
    const mine = await createTriggerEndpoint(service, "https://93.184.215.14/hooks", { active: false })
    noisy = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [mine.endpointId] })
    const theirs = await createTriggerEndpoint(service, "https://93.184.215.14/hooks", { key: OTHER_KEY, active: false })
    quiet = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [theirs.endpointId] }, OTHER_KEY)
  })
  afterAll(() => service.close())

  it("refuses a project's bodies past its bytes with 429 and Retry-After, and never another project's", async () => {
    const statuses: Array<number> = []
    let refusal: Response | undefined
    for (let i = 0; i < 5; i++) {
      const response = await postIngest(service, ingestPath(noisy), event(`Ev-noisy-${i}`, 900_000))
      statuses.push(response.status)
      if (response.status === 429) refusal ??= response
      else await response.text()
    }
    // A burst of 3 MiB takes three bodies of 0.9 MB, not a fourth.
    expect(statuses).toEqual([202, 202, 202, 429, 429])
    const body = (await refusal!.json()) as { error: { code: string; retryable: boolean; retryAfter: number } }
    expect(body.error).toMatchObject({ code: "rate_limited", retryable: true })
    expect(body.error.retryAfter).toBeGreaterThanOrEqual(1)
    expect(refusal!.headers.get("retry-after")).toBe(String(body.error.retryAfter))
    // The other project's ingest is untouched.
    expect((await postIngest(service, ingestPath(quiet), event("Ev-quiet-1", 900_000))).status).toBe(202)
    // A body costs its bytes once per endpoint it goes to (re-audit: 20 endpoints made the
    // budget's 16 MiB burst 320 MB of deliveries at once).
    const fanned = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: await Promise.all([1, 2, 3].map(async () =>
      (await createTriggerEndpoint(service, "https://93.184.215.14/hooks", { key: OTHER_KEY, active: false })).endpointId)) }, OTHER_KEY)
    // The other project spent 0.9 MB of its 3 MiB burst above: 0.8 MB to three endpoints is 2.4 MB, too
    // much; 0.1 MB to three is 0.3 MB, taken.
    expect((await postIngest(service, ingestPath(fanned), event("Ev-fanned-1", 800_000))).status).toBe(429)
    expect((await postIngest(service, ingestPath(fanned), event("Ev-fanned-2", 100_000))).status).toBe(202)
    // A bad credential is the same 404 as ever, budget or not: nothing tells it apart.
    const [, , , subscriptionId] = ingestPath(noisy).split("/")
    expect((await postIngest(service, `/v1/ingest/${subscriptionId}/wrong-secret-000000000000000000000000`, event("Ev-x", 10))).status).toBe(404)
  }, 30_000)
})
