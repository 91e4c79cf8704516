import { describe, expect, it } from "vitest"
import * as Arrival from "../../../domain/triggers/TriggerEvent.ts"
import { deciderSpecification } from "../../support/Decider.ts"

const given = deciderSpecification(Arrival.arrivalDecider)
const at = "2026-01-01T00:00:00.000Z"
const accepted: Arrival.TriggerEventReceived = {
  type: "TriggerEventReceived",
  arrivalId: "trgevt_1",
  eventId: "evt_trigger_1",
  projectId: "proj_1",
  subscriptionId: "trgsub_1",
  userId: "user_1",
  trigger: "demo.event",
  deliveryMode: "push",
  receivedAt: at,
  occurredAt: at,
  dedupStatus: "accepted",
  requestedWebhookEndpointIds: ["whe_1", "whe_2"],
  owner: "run_1"
}
const { owner: _, ...rest } = accepted
const duplicateReceived: Arrival.TriggerEventReceived = { ...rest, arrivalId: "trgevt_2", dedupStatus: "duplicate" }
const targets = [{ endpointId: "whe_1", deliveryId: "whd_1" }]

describe("trigger arrival decider", () => {
  it("an accepted arrival is selecting; a duplicate is not enqueued, and nothing follows it", () => {
    const { type: _type, ...fields } = accepted
    expect(given([]).when({ type: "RecordArrival", arrival: fields }).then([accepted])).toMatchObject({ phase: "selecting", targets: [] })
    given([accepted]).when({ type: "RecordArrival", arrival: fields }).thenFails({ _tag: "ArrivalExists" })
    expect(given([duplicateReceived]).when({ type: "SelectTargets", targets, at }).thenNothingHappened()).toMatchObject({ phase: "not_enqueued" })
  })

  it("selects targets once, or none (no_targets)", () => {
    expect(given([accepted]).when({ type: "SelectTargets", targets, at }).then([{ type: "TriggerTargetsSelected", targets, at }]))
      .toMatchObject({ phase: "targets", targets })
    expect(given([accepted]).when({ type: "SelectTargets", targets: [], at }).then([{ type: "TriggerTargetsSelected", targets: [], at }]))
      .toMatchObject({ phase: "no_targets" })
    given([accepted, { type: "TriggerTargetsSelected", targets, at }]).when({ type: "SelectTargets", targets: [], at }).thenNothingHappened()
  })

  it("admission fails only while selecting: whichever decides first wins", () => {
    expect(given([accepted]).when({ type: "FailAdmission", at }).then([{ type: "TriggerAdmissionFailed", reason: "payload_unavailable", at }]))
      .toMatchObject({ phase: "admission_failed" })
    given([accepted, { type: "TriggerTargetsSelected", targets, at }]).when({ type: "FailAdmission", at }).thenNothingHappened()
    given([accepted, { type: "TriggerAdmissionFailed", reason: "payload_unavailable", at }]).when({ type: "SelectTargets", targets, at }).thenNothingHappened()
    given([]).when({ type: "FailAdmission", at }).thenFails({ _tag: "ArrivalNotFound" })
  })

  it("its events carry no payload, provider id, filters, URL or secret", () => {
    const keys = Object.keys(Arrival.TriggerEventReceived.fields).toSorted()
    expect(keys).toEqual([
      "arrivalId", "connectionId", "dedupStatus", "deliveryMode", "eventId", "occurredAt", "owner", "projectId", "receivedAt",
      "requestedWebhookEndpointIds", "subscriptionId", "trigger", "type", "userId"
    ])
  })
})
