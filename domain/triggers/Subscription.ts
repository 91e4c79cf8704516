/**
 * A trigger subscription as an actor (spec, "Subscriptions"; decisions.md section 5): its events,
 * state, `evolve` and `decide`. Pure: the ingest secret arrives already hashed (it is shown once
 * and never stored in plain text), time arrives on the command. Which trigger, connection and
 * endpoints a subscription may name is checked before the command is made (infra/triggers).
 */
import { Schema } from "effect"
import { streamCodec } from "../EventCodec.ts"
import { JsonObject } from "../JsonObject.ts"

export const SUBSCRIPTION_STREAM_TYPE = "trigger-subscription"
export const subscriptionStreamId = (subscriptionId: string): string => `${SUBSCRIPTION_STREAM_TYPE}-${subscriptionId}`

export const DeliveryMode = Schema.Literals(["push", "polling"])
export type DeliveryMode = typeof DeliveryMode.Type

export const SubscriptionCreated = Schema.Struct({
  type: Schema.Literal("SubscriptionCreated"),
  subscriptionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String,
  trigger: Schema.String,
  deliveryMode: DeliveryMode,
  connectionId: Schema.optionalKey(Schema.String),
  webhookEndpointIds: Schema.Array(Schema.String),
  filters: JsonObject,
  /** Polling subscriptions only. */
  pollIntervalSeconds: Schema.optionalKey(Schema.Int),
  /** Push subscriptions only: the SHA-256 (hex) of the ingest secret. */
  secretHash: Schema.optionalKey(Schema.String),
  at: Schema.String
})
export type SubscriptionCreated = typeof SubscriptionCreated.Type

export const SubscriptionSecretRotated = Schema.Struct({
  type: Schema.Literal("SubscriptionSecretRotated"),
  secretHash: Schema.String,
  at: Schema.String
})
export type SubscriptionSecretRotated = typeof SubscriptionSecretRotated.Type

export const SubscriptionDeleted = Schema.Struct({ type: Schema.Literal("SubscriptionDeleted"), at: Schema.String })
export type SubscriptionDeleted = typeof SubscriptionDeleted.Type

export const SubscriptionEvent = Schema.Union([SubscriptionCreated, SubscriptionSecretRotated, SubscriptionDeleted])
export type SubscriptionEvent = typeof SubscriptionEvent.Type

/** How subscription events enter the log and come back out of it (EventCodec.ts). */
export const subscriptionCodec = streamCodec(SUBSCRIPTION_STREAM_TYPE, SubscriptionEvent)

export interface Subscription {
  readonly subscriptionId: string
  readonly projectId: string
  readonly userId: string
  readonly trigger: string
  readonly deliveryMode: DeliveryMode
  readonly connectionId?: string | undefined
  readonly webhookEndpointIds: ReadonlyArray<string>
  readonly filters: typeof JsonObject.Type
  readonly pollIntervalSeconds?: number | undefined
  readonly secretHash?: string | undefined
  /** The spec shows only `active`; a deleted subscription has no public form at all. */
  readonly status: "active"
  readonly createdAt: string
  readonly updatedAt: string
  readonly deleted: boolean
}

export type SubscriptionState = Subscription | undefined

export const evolve = (state: SubscriptionState, event: SubscriptionEvent): SubscriptionState => {
  switch (event.type) {
    case "SubscriptionCreated": {
      const { type: _, at, ...fields } = event
      return { ...fields, status: "active", createdAt: at, updatedAt: at, deleted: false }
    }
    case "SubscriptionSecretRotated":
      return state === undefined ? state : { ...state, secretHash: event.secretHash, updatedAt: event.at }
    case "SubscriptionDeleted":
      return state === undefined ? state : { ...state, deleted: true, updatedAt: event.at }
  }
}

export type SubscriptionCommand =
  | { readonly type: "CreateSubscription"; readonly subscription: Omit<SubscriptionCreated, "type"> }
  | { readonly type: "RotateIngestSecret"; readonly projectId: string; readonly secretHash: string; readonly at: string }
  | { readonly type: "DeleteSubscription"; readonly projectId: string; readonly at: string }

export type SubscriptionRejection =
  | { readonly _tag: "SubscriptionNotFound" }
  | { readonly _tag: "SubscriptionExists" }
  /** rotate-secret on a polling subscription: it has no ingest URL. */
  | { readonly _tag: "NotPushSubscription" }

/** Events for a command, or why the current state refuses it. Another project's subscription is not found. */
export const decide = (command: SubscriptionCommand, state: SubscriptionState): ReadonlyArray<SubscriptionEvent> | SubscriptionRejection => {
  if (command.type === "CreateSubscription") {
    return state === undefined ? [{ type: "SubscriptionCreated", ...command.subscription }] : { _tag: "SubscriptionExists" }
  }
  if (state === undefined || state.deleted || state.projectId !== command.projectId) return { _tag: "SubscriptionNotFound" }
  switch (command.type) {
    case "RotateIngestSecret":
      return state.deliveryMode === "push"
        ? [{ type: "SubscriptionSecretRotated", secretHash: command.secretHash, at: command.at }]
        : { _tag: "NotPushSubscription" }
    case "DeleteSubscription":
      return [{ type: "SubscriptionDeleted", at: command.at }]
  }
}

export const subscriptionDecider = {
  streamType: SUBSCRIPTION_STREAM_TYPE,
  codec: subscriptionCodec,
  initialState: undefined as SubscriptionState,
  evolve,
  decide
}

/** Ingest secrets: `trgsec_` + 43 base64url characters (256 random bits). */
export const INGEST_SECRET_PREFIX = "trgsec_"
export const INGEST_SECRET_PATTERN = /^trgsec_[A-Za-z0-9_-]{43}$/
