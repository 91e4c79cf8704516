/**
 * Admission of a normalized trigger event, pushed or polled (spec, "Trigger arrival and
 * deduplication"; decisions.md section 5): the dedup claim, then the history record with its
 * fan-out (TriggerFanout.ts). A first arrival is recorded `accepted`, its payload kept in this process
 * (TriggerPayloads.ts) and queued for fan-out; a second arrival of the same provider event within
 * 24 hours is recorded `duplicate` with the first one's eventId (push), or skipped (polling: the
 * overlap between two polls is no provider retry).
 *
 * The claim names the arrival that made it. Should that arrival's record be missing (its
 * process died between claim and record, or is about to record it), a later arrival records it
 * in its stead: both append to the same arrival stream at version 0, so exactly one accepted
 * record exists, and the loser records itself as a duplicate.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { JsonObject } from "../../domain/JsonObject.ts"
import { isoTime } from "../../domain/Time.ts"
import type { Subscription } from "../../domain/triggers/Subscription.ts"
import { ARRIVAL_STREAM_TYPE, arrivalCodec, arrivalStreamId, type TriggerEventReceived } from "../../domain/triggers/TriggerEvent.ts"
import { Runner } from "../actors/index.ts"
import { EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { newId } from "../Ids.ts"
import type { WebhookEvent } from "../webhooks/WebhookSources.ts"
import { DedupClaims } from "./DedupClaims.ts"
import { TriggerFanout } from "./TriggerFanout.ts"
import { TriggerPayloads } from "./TriggerPayloads.ts"
import { EVENTS_TABLE } from "./TriggerProjections.ts"

export interface Arrival {
  readonly subscription: Subscription
  /** The provider's event id (push) or `issue:<id>` (polling). */
  readonly dedupKey: string
  readonly occurredAtMs: number
  readonly payload: typeof JsonObject.Type
}

export type AdmissionResult = "accepted" | "duplicate" | "skipped"

export interface AdmissionShape {
  /** `duplicates: "skip"` records nothing for a second arrival (polling). */
  readonly admit: (arrival: Arrival, duplicates: "record" | "skip") => Effect.Effect<AdmissionResult, StoreUnavailable>
}

export class Admission extends Context.Service<Admission, AdmissionShape>()("app/infra/triggers/Admission") {}

/** The delivered event (decisions.md section 5): envelope id = eventId, data as decided. */
export const webhookEventOf = (received: TriggerEventReceived, payload: typeof JsonObject.Type): WebhookEvent => ({
  eventId: received.eventId,
  type: `trigger.${received.trigger}`,
  projectId: received.projectId,
  createdAt: received.receivedAt,
  data: {
    subscriptionId: received.subscriptionId,
    eventId: received.eventId,
    trigger: received.trigger,
    userId: received.userId,
    connectionId: received.connectionId ?? null,
    occurredAt: received.occurredAt,
    payload
  }
})

/** An arrival's record: accepted when it names its owner (the incarnation holding the payload), else a duplicate. */
const receivedOf = (arrival: Arrival, ids: { readonly arrivalId: string; readonly eventId: string }, now: number, owner: string | undefined): TriggerEventReceived => {
  const { subscription } = arrival
  return {
    type: "TriggerEventReceived",
    arrivalId: ids.arrivalId,
    eventId: ids.eventId,
    projectId: subscription.projectId,
    subscriptionId: subscription.subscriptionId,
    userId: subscription.userId,
    ...(subscription.connectionId !== undefined ? { connectionId: subscription.connectionId } : {}),
    trigger: subscription.trigger,
    deliveryMode: subscription.deliveryMode,
    receivedAt: isoTime(now),
    occurredAt: isoTime(arrival.occurredAtMs),
    dedupStatus: owner === undefined ? "duplicate" : "accepted",
    requestedWebhookEndpointIds: subscription.webhookEndpointIds,
    ...(owner !== undefined ? { owner } : {})
  }
}

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const claims = yield* DedupClaims
  const payloads = yield* TriggerPayloads
  const fanout = yield* TriggerFanout
  const runner = yield* Runner

  const record = (received: TriggerEventReceived) =>
    Effect.map(
      store.append([{
        streamId: arrivalStreamId(received.arrivalId),
        streamType: ARRIVAL_STREAM_TYPE,
        expectedVersion: 0,
        events: [arrivalCodec.encode(received, newId("evt"))]
      }]),
      (recorded) => recorded[0]!
    )

  const duplicate = (arrival: Arrival, eventId: string, now: number) =>
    Effect.as(record(receivedOf(arrival, { arrivalId: newId("trgevt"), eventId }, now, undefined)), "duplicate" as const)

  /** Records the arrival as accepted under `ids`; a lost race for its stream makes it a duplicate (or nothing). */
  const accept = Effect.fnUntraced(function*(arrival: Arrival, ids: { readonly arrivalId: string; readonly eventId: string }, now: number, duplicates: "record" | "skip") {
    // While the lease is lost the arrival is refused (503) rather than held (Runner.ts).
    const incarnation = yield* runner.registered
    payloads.own(incarnation.id)
    const received = receivedOf(arrival, ids, now, incarnation.id)
    // Kept before the record exists: its deliveries, here or by a recoverer, find it.
    payloads.set(webhookEventOf(received, arrival.payload))
    // Recorded with its targets and their deliveries in one commit (TriggerFanout.ts).
    const recorded = yield* fanout.admit(received)
    if (!recorded) return duplicates === "skip" ? "skipped" as const : yield* duplicate(arrival, ids.eventId, now)
    return "accepted" as const
  })

  const admit = Effect.fnUntraced(function*(arrival: Arrival, duplicates: "record" | "skip") {
    const now = yield* Clock.currentTimeMillis
    const ids = { arrivalId: newId("trgevt"), eventId: newId("evt_trigger") }
    const claim = yield* claims.claim({ subscriptionId: arrival.subscription.subscriptionId, key: arrival.dedupKey, ...ids })
    if (claim._tag === "Claimed") return yield* accept(arrival, ids, now, duplicates)
    const first = yield* views.get(EVENTS_TABLE, { arrival_id: claim.arrivalId })
    if (first === undefined) return yield* accept(arrival, { arrivalId: claim.arrivalId, eventId: claim.eventId }, now, duplicates)
    return duplicates === "skip" ? "skipped" as const : yield* duplicate(arrival, claim.eventId, now)
  }, (effect) =>
    // A lost race that keeps repeating is a bug, not the caller's problem.
    Effect.catchTag(effect, "ConcurrencyConflict", (conflict) => Effect.die(conflict)))

  return Admission.of({ admit })
})

export const layer = Layer.effect(Admission, make)
