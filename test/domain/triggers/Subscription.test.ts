import { describe, expect, it } from "vitest"
import * as Subscription from "../../../domain/triggers/Subscription.ts"
import { deciderSpecification } from "../../support/Decider.ts"

const given = deciderSpecification(Subscription.subscriptionDecider)
const at = "2026-01-01T00:00:00.000Z"
const later = "2026-01-02T00:00:00.000Z"
const push: Subscription.SubscriptionCreated = {
  type: "SubscriptionCreated",
  subscriptionId: "trgsub_1",
  projectId: "proj_1",
  userId: "user_1",
  trigger: "demo.event",
  deliveryMode: "push",
  webhookEndpointIds: ["whe_1"],
  filters: {},
  secretHash: "a".repeat(64),
  at
}
const pollingCreated: Subscription.SubscriptionCreated = {
  type: "SubscriptionCreated",
  subscriptionId: "trgsub_2",
  projectId: "proj_1",
  userId: "user_1",
  trigger: "github.issue_opened",
  deliveryMode: "polling",
  connectionId: "conn_1",
  webhookEndpointIds: ["whe_1"],
  filters: { owner: "o", repo: "r" },
  pollIntervalSeconds: 60,
  at
}

describe("subscription decider", () => {
  it("creates once; the state is active with its creation time", () => {
    const { type: _type, ...fields } = push
    const state = given([]).when({ type: "CreateSubscription", subscription: fields }).then([push])
    expect(state).toMatchObject({ status: "active", createdAt: at, updatedAt: at, deleted: false, secretHash: "a".repeat(64) })
    given([push]).when({ type: "CreateSubscription", subscription: fields }).thenFails({ _tag: "SubscriptionExists" })
  })

  it("rotates a push subscription's secret hash; a polling one has none to rotate", () => {
    const state = given([push]).when({ type: "RotateIngestSecret", projectId: "proj_1", secretHash: "b".repeat(64), at: later })
      .then([{ type: "SubscriptionSecretRotated", secretHash: "b".repeat(64), at: later }])
    expect(state).toMatchObject({ secretHash: "b".repeat(64), updatedAt: later, createdAt: at })
    given([pollingCreated]).when({ type: "RotateIngestSecret", projectId: "proj_1", secretHash: "b".repeat(64), at: later })
      .thenFails({ _tag: "NotPushSubscription" })
  })

  it("another project's, an absent or a deleted subscription is not found", () => {
    given([push]).when({ type: "DeleteSubscription", projectId: "proj_2", at: later }).thenFails({ _tag: "SubscriptionNotFound" })
    given([]).when({ type: "DeleteSubscription", projectId: "proj_1", at: later }).thenFails({ _tag: "SubscriptionNotFound" })
    const deleted = { type: "SubscriptionDeleted", at: later } as const
    expect(given([push]).when({ type: "DeleteSubscription", projectId: "proj_1", at: later }).then([deleted])).toMatchObject({ deleted: true })
    given([push, deleted]).when({ type: "RotateIngestSecret", projectId: "proj_1", secretHash: "c", at: later }).thenFails({ _tag: "SubscriptionNotFound" })
    given([push, deleted]).when({ type: "DeleteSubscription", projectId: "proj_1", at: later }).thenFails({ _tag: "SubscriptionNotFound" })
  })

  it("events round-trip through the codec", () => {
    for (const event of [push, pollingCreated, { type: "SubscriptionDeleted", at } as const]) {
      const encoded = Subscription.subscriptionCodec.encode(event, "evt_1")
      expect(Subscription.subscriptionCodec.decode({ streamId: "s", type: encoded.type, data: JSON.parse(JSON.stringify(encoded.data)) })).toEqual(event)
    }
  })
})
