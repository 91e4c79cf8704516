/**
 * One trigger arrival as an actor over its own stream (`trigger-event-<arrivalId>`): its history
 * facts, state, `evolve` and `decide` (spec, "Trigger event history row", "Trigger arrival and
 * deduplication"; decisions.md section 5). Metadata only: the payload, the provider's event id,
 * filters, secrets and endpoint URLs never enter these events.
 *
 * An accepted arrival is `selecting` until its targets are chosen, then has targets (or none);
 * `admission_failed` when its payload was lost first (a restart: payloads are process-local).
 * A duplicate arrival is recorded `not_enqueued` with the accepted arrival's eventId and nothing
 * follows it.
 */
import { Schema } from "effect"
import { streamCodec } from "../EventCodec.ts"
import { DeliveryMode } from "./Subscription.ts"

export const ARRIVAL_STREAM_TYPE = "trigger-event"
export const arrivalStreamId = (arrivalId: string): string => `${ARRIVAL_STREAM_TYPE}-${arrivalId}`

/** History rows are hidden this long after receivedAt, then swept. */
export const HISTORY_TTL_MS = 7 * 24 * 60 * 60 * 1000

export const DedupStatus = Schema.Literals(["accepted", "duplicate"])
export type DedupStatus = typeof DedupStatus.Type

export const TriggerEventReceived = Schema.Struct({
  type: Schema.Literal("TriggerEventReceived"),
  arrivalId: Schema.String,
  eventId: Schema.String,
  projectId: Schema.String,
  subscriptionId: Schema.String,
  userId: Schema.String,
  connectionId: Schema.optionalKey(Schema.String),
  trigger: Schema.String,
  deliveryMode: DeliveryMode,
  receivedAt: Schema.String,
  occurredAt: Schema.String,
  dedupStatus: DedupStatus,
  requestedWebhookEndpointIds: Schema.Array(Schema.String),
  /** The incarnation (infra/actors/Runner.ts) holding the payload of an accepted arrival. */
  owner: Schema.optionalKey(Schema.String)
})
export type TriggerEventReceived = typeof TriggerEventReceived.Type

export const DeliveryTarget = Schema.Struct({ endpointId: Schema.String, deliveryId: Schema.String })
export type DeliveryTarget = typeof DeliveryTarget.Type

export const TriggerTargetsSelected = Schema.Struct({
  type: Schema.Literal("TriggerTargetsSelected"),
  targets: Schema.Array(DeliveryTarget),
  at: Schema.String
})
export type TriggerTargetsSelected = typeof TriggerTargetsSelected.Type

export const TriggerAdmissionFailed = Schema.Struct({
  type: Schema.Literal("TriggerAdmissionFailed"),
  reason: Schema.Literal("payload_unavailable"),
  at: Schema.String
})
export type TriggerAdmissionFailed = typeof TriggerAdmissionFailed.Type

export const ArrivalEvent = Schema.Union([TriggerEventReceived, TriggerTargetsSelected, TriggerAdmissionFailed])
export type ArrivalEvent = typeof ArrivalEvent.Type

export const arrivalCodec = streamCodec(ARRIVAL_STREAM_TYPE, ArrivalEvent)

/**
 * Physical removal of expired history rows, a batch (at most 1,000) per event on a stream of its
 * own, so that a replay of the log removes them again.
 */
export const SWEEP_STREAM_TYPE = "trigger-history-sweep"
export const MAX_SWEEP_BATCH = 1_000
export const TriggerEventsSwept = Schema.Struct({
  type: Schema.Literal("TriggerEventsSwept"),
  arrivalIds: Schema.Array(Schema.String),
  at: Schema.String
})
export type TriggerEventsSwept = typeof TriggerEventsSwept.Type
export const sweepCodec = streamCodec(SWEEP_STREAM_TYPE, Schema.Union([TriggerEventsSwept]))

/** Where an arrival stands before its deliveries move; the history's deliveryStatus starts here. */
export type Phase = "not_enqueued" | "selecting" | "no_targets" | "targets" | "admission_failed"

export interface Arrival {
  readonly received: TriggerEventReceived
  readonly phase: Phase
  readonly targets: ReadonlyArray<DeliveryTarget>
}

export type ArrivalState = Arrival | undefined

export const phaseOf = (event: ArrivalEvent): Phase => {
  switch (event.type) {
    case "TriggerEventReceived":
      return event.dedupStatus === "accepted" ? "selecting" : "not_enqueued"
    case "TriggerTargetsSelected":
      return event.targets.length === 0 ? "no_targets" : "targets"
    case "TriggerAdmissionFailed":
      return "admission_failed"
  }
}

export const evolve = (state: ArrivalState, event: ArrivalEvent): ArrivalState => {
  switch (event.type) {
    case "TriggerEventReceived":
      return { received: event, phase: phaseOf(event), targets: [] }
    case "TriggerTargetsSelected":
      return state === undefined ? state : { ...state, phase: phaseOf(event), targets: event.targets }
    case "TriggerAdmissionFailed":
      return state === undefined ? state : { ...state, phase: "admission_failed" }
  }
}

export type ArrivalCommand =
  | { readonly type: "RecordArrival"; readonly arrival: Omit<TriggerEventReceived, "type"> }
  | { readonly type: "SelectTargets"; readonly targets: ReadonlyArray<DeliveryTarget>; readonly at: string }
  | { readonly type: "FailAdmission"; readonly at: string }

export type ArrivalRejection = { readonly _tag: "ArrivalExists" } | { readonly _tag: "ArrivalNotFound" }

/**
 * Targets are selected, or admission fails, once, and only for an accepted arrival still
 * selecting: whichever comes first wins (an admission failure after the targets changes nothing).
 */
export const decide = (command: ArrivalCommand, state: ArrivalState): ReadonlyArray<ArrivalEvent> | ArrivalRejection => {
  if (command.type === "RecordArrival") {
    return state === undefined ? [{ type: "TriggerEventReceived", ...command.arrival }] : { _tag: "ArrivalExists" }
  }
  if (state === undefined) return { _tag: "ArrivalNotFound" }
  if (state.phase !== "selecting") return []
  return command.type === "SelectTargets"
    ? [{ type: "TriggerTargetsSelected", targets: command.targets, at: command.at }]
    : [{ type: "TriggerAdmissionFailed", reason: "payload_unavailable", at: command.at }]
}

export const arrivalDecider = {
  streamType: ARRIVAL_STREAM_TYPE,
  codec: arrivalCodec,
  initialState: undefined as ArrivalState,
  evolve,
  decide
}
