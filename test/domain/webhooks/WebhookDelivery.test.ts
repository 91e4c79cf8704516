import { describe, expect, it } from "vitest"
import * as Delivery from "../../../domain/webhooks/WebhookDelivery.ts"
import { deciderSpecification } from "../../support/Decider.ts"

const delays = [0, 30_000, 120_000, 600_000, 3_600_000]
const queued: Delivery.DeliveryQueued = {
  type: "DeliveryQueued",
  deliveryId: "whd_x",
  endpointId: "whe_x",
  projectId: "proj_1",
  eventId: "evt_1",
  eventType: "execution.succeeded",
  source: { streamId: "execution-exe_1", version: 2, position: Delivery.positionKey(1n, 2n) },
  queuedAt: "2026-01-01T00:00:00.000Z"
}
const recordAttempt = (outcome: Delivery.AttemptOutcome, startedAt: number, endedAt = startedAt + 100): Delivery.DeliveryCommand => ({
  type: "RecordAttempt",
  outcome,
  startedAt,
  endedAt,
  delays
})
const attempt = (state: Delivery.DeliveryState, outcome: Delivery.AttemptOutcome, startedAt: number, endedAt = startedAt + 100) =>
  Delivery.decide(recordAttempt(outcome, startedAt, endedAt), state)
const given = deciderSpecification<Delivery.DeliveryCommand, Delivery.DeliveryState, Delivery.DeliveryEvent>({
  decide: Delivery.decide,
  evolve: Delivery.evolve,
  initialState: undefined
})

describe("pending delivery", () => {
  const state = Delivery.fold([queued])
  it("starts pending with no attempts", () => {
    expect(state).toMatchObject({ status: "pending", attempts: [] })
  })
  it("any 2xx succeeds and completes when the attempt ends, as a give-up does (outside audit: it was the attempt's start)", () => {
    const attemptedAt = new Date(1_000).toISOString()
    const completedAt = new Date(2_500).toISOString()
    const next = given([queued]).when(recordAttempt({ statusCode: 204 }, 1_000, 2_500))
      .then([{ type: "DeliveryAttemptSucceeded", attemptedAt, completedAt, statusCode: 204, attempts: [{ attemptedAt, statusCode: 204 }] }])
    expect(next).toMatchObject({ status: "succeeded", completedAt, nextRetryAt: undefined })
  })
  it("a success recorded before its end was kept completes at its attempt's start", () => {
    const attemptedAt = new Date(1_000).toISOString()
    const folded = Delivery.fold([queued, { type: "DeliveryAttemptSucceeded", attemptedAt, statusCode: 200, attempts: [{ attemptedAt, statusCode: 200 }] }])
    expect(folded).toMatchObject({ status: "succeeded", completedAt: attemptedAt })
  })
  it("a failure schedules the next attempt from the end of this one", () => {
    const attemptedAt = new Date(1_000).toISOString()
    const next = given([queued]).when(recordAttempt({ error: "timeout" }, 1_000, 11_000)).then([{
      type: "DeliveryAttemptFailed",
      attemptedAt,
      error: "timeout",
      nextRetryAt: new Date(11_000 + 30_000).toISOString(),
      attempts: [{ attemptedAt, error: "timeout" }]
    }])
    expect(next).toMatchObject({ status: "delivering", attempts: [{ error: "timeout" }] })
  })
  it("3xx and 410 are failures", () => {
    for (const statusCode of [301, 302, 410, 500]) {
      given([queued]).when(recordAttempt({ statusCode }, 0)).then((events) => expect(events[0]?.type).toBe("DeliveryAttemptFailed"))
    }
  })
})

describe("retry schedule", () => {
  it("waits 30 s, 2 m, 10 m, 1 h and gives up after attempt 5", () => {
    let state = Delivery.fold([queued])
    let now = 0
    const waits: Array<number> = []
    for (let n = 1; n <= 5; n++) {
      const events = attempt(state, { statusCode: 503 }, now, now + 50)
      state = events.reduce(Delivery.evolve, state)
      if (n < 5) {
        const next = Date.parse(state!.nextRetryAt!)
        waits.push(next - (now + 50))
        now = next
      } else {
        expect(events.map((e) => e.type)).toEqual(["DeliveryAttemptFailed", "DeliveryGivenUp"])
      }
    }
    expect(waits).toEqual([30_000, 120_000, 600_000, 3_600_000])
    expect(state).toMatchObject({ status: "failed", nextRetryAt: undefined })
    expect(state!.attempts).toHaveLength(5)
    // Each attempt event carries the history so far, which the view is written from.
    expect(state!.attempts.map((a) => a.attemptedAt)).toEqual(state!.attempts.map((a) => a.attemptedAt).toSorted())
    expect(state!.completedAt).toBeDefined()
    expect(attempt(state, { statusCode: 200 }, now)).toEqual([])
  })
})

describe("abandon", () => {
  it("stops an unfinished delivery and leaves a finished one alone", () => {
    given([queued]).when({ type: "Abandon", at: 5, reason: "endpoint_inactive" }).then((_, after) => {
      expect(after).toMatchObject({ status: "failed", completedAt: new Date(5).toISOString() })
      expect(Delivery.decide({ type: "Abandon", at: 6, reason: "endpoint_deleted" }, after)).toEqual([])
    })
  })
})

describe("positions", () => {
  it("order as text the way they order as numbers", () => {
    expect(Delivery.positionKey(9n, 10n) < Delivery.positionKey(10n, 2n)).toBe(true)
    expect(Delivery.positionKey(10n, 2n) < Delivery.positionKey(10n, 11n)).toBe(true)
  })
})
