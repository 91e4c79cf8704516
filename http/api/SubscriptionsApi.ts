/**
 * Routes that are specified but not served yet: trigger subscriptions and trigger-event history
 * (spec, "Subscriptions", "Trigger event history"; decisions.md section 5) and the webhook
 * recovery extension (decisions.md section 9). The groups are declared here, and NOT added to
 * `Api.ts`, so that the client library can type and decode these routes now; the server team adds
 * each group to `Api.ts` with its handlers when the route exists, and the contract does not move.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { JsonObject } from "../../domain/JsonObject.ts"
import { pageQuery } from "./Query.ts"
import { WebhookDelivery } from "./WebhooksApi.ts"

const Identifier = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.-]{1,64}$/))
const ResourceId = Schema.String.check(Schema.isMaxLength(100))
/** A canonical dotted trigger name, `<toolkit>.<name>`. */
const TriggerName = Schema.String.check(Schema.isMaxLength(200))
/** ISO 8601 with a time and an offset: what every time in the API looks like. */
const Timestamp = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/, {
    message: "expected an ISO 8601 time such as 2026-01-01T00:00:00.000Z"
  })
)

// --- Subscriptions --------------------------------------------------------------------------

/**
 * The public form (spec, "Subscription (public form)"). `connectionId` is absent for toolkits
 * that take no connection (decisions.md 5: a connection is refused for them);
 * `pollIntervalSeconds` is present for polling subscriptions only. The spec shows only the
 * status `active`, so other values are not ruled out here.
 */
export const Subscription = Schema.Struct({
  subscriptionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String,
  trigger: Schema.String,
  connectionId: Schema.optionalKey(Schema.String),
  webhookEndpointIds: Schema.Array(Schema.String),
  filters: JsonObject,
  status: Schema.String,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  pollIntervalSeconds: Schema.optionalKey(Schema.Int)
})
export type Subscription = typeof Subscription.Type

/** The create answer: push subscriptions add their secret `ingestUrl`, shown this once. */
export const CreatedSubscription = Schema.Struct({ ...Subscription.fields, ingestUrl: Schema.optionalKey(Schema.String) })
export type CreatedSubscription = typeof CreatedSubscription.Type

/** Closed body (decisions.md 5); which user, connection and cadence apply is the server's rule. */
export const CreateSubscriptionRequest = Schema.Struct({
  trigger: TriggerName,
  userId: Schema.optionalKey(Identifier),
  connectionId: Schema.optionalKey(ResourceId),
  webhookEndpointIds: Schema.Array(ResourceId).check(Schema.isMinLength(1), Schema.isMaxLength(20)),
  filters: Schema.optionalKey(JsonObject),
  // The lower bound is configuration (SERVICE_TRIGGER_MIN_POLL_SECONDS); the server checks it.
  pollIntervalSeconds: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 86_400 })))
})
export type CreateSubscriptionRequest = typeof CreateSubscriptionRequest.Type

export const SubscriptionPage = Schema.Struct({
  subscriptions: Schema.Array(Subscription),
  nextCursor: Schema.optionalKey(Schema.String)
})
export type SubscriptionPage = typeof SubscriptionPage.Type

/** rotate-secret: the new ingest URL; the old one stops authenticating at once. */
export const RotatedIngestUrl = Schema.Struct({
  subscriptionId: Schema.String,
  ingestUrl: Schema.String,
  rotatedAt: Schema.String
})
export type RotatedIngestUrl = typeof RotatedIngestUrl.Type

const SubscriptionIdParam = { subscriptionId: ResourceId }

export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.post("create", "/v1/subscriptions", {
      payload: CreateSubscriptionRequest,
      headers: { "x-service-user-id": Schema.optionalKey(Schema.String) },
      success: CreatedSubscription.pipe(HttpApiSchema.status(201))
    }),
    HttpApiEndpoint.get("list", "/v1/subscriptions", {
      query: { ...pageQuery, userId: Schema.optionalKey(Schema.String) },
      headers: { "x-service-user-id": Schema.optionalKey(Schema.String) },
      success: SubscriptionPage
    }),
    HttpApiEndpoint.get("get", "/v1/subscriptions/:subscriptionId", { params: SubscriptionIdParam, success: Subscription }),
    HttpApiEndpoint.post("rotateSecret", "/v1/subscriptions/:subscriptionId/rotate-secret", {
      params: SubscriptionIdParam,
      success: RotatedIngestUrl
    }),
    HttpApiEndpoint.delete("remove", "/v1/subscriptions/:subscriptionId", {
      params: SubscriptionIdParam,
      success: HttpApiSchema.NoContent
    })
  ) {}

// --- Trigger event history ------------------------------------------------------------------

export const TriggerDeliveryMode = Schema.Literals(["push", "polling"])
export const DedupStatus = Schema.Literals(["accepted", "duplicate"])
export const TriggerDeliveryStatus = Schema.Literals([
  "not_enqueued",
  "admission_failed",
  "selecting",
  "no_targets",
  "pending",
  "delivering",
  "succeeded",
  "failed",
  "partial"
])

/** One history row (spec, "Trigger event history row"): metadata only, never a payload. */
export const TriggerEvent = Schema.Struct({
  arrivalId: Schema.String,
  eventId: Schema.String,
  subscriptionId: Schema.String,
  trigger: Schema.String,
  deliveryMode: TriggerDeliveryMode,
  receivedAt: Schema.String,
  occurredAt: Schema.String,
  dedupStatus: DedupStatus,
  deliveryStatus: TriggerDeliveryStatus,
  requestedWebhookEndpointIds: Schema.Array(Schema.String),
  deliveryTargets: Schema.Array(Schema.Struct({
    endpointId: Schema.String,
    deliveryId: Schema.String,
    status: Schema.Literals(["pending", "delivering", "succeeded", "failed"])
  })),
  expiresAt: Schema.String
})
export type TriggerEvent = typeof TriggerEvent.Type

export const TriggerEventPage = Schema.Struct({
  triggerEvents: Schema.Array(TriggerEvent),
  nextCursor: Schema.optionalKey(Schema.String)
})
export type TriggerEventPage = typeof TriggerEventPage.Type

/** Unpinned keys only; newest receivedAt first. */
export class TriggerEventsApi extends HttpApiGroup.make("triggerEvents")
  .add(
    HttpApiEndpoint.get("list", "/v1/trigger-events", {
      query: { ...pageQuery, subscriptionId: Schema.optionalKey(ResourceId), trigger: Schema.optionalKey(TriggerName) },
      success: TriggerEventPage
    })
  ) {}

// --- Webhook recovery (decisions.md section 9, an extension) --------------------------------

export const RecoverRequest = Schema.Struct({ since: Timestamp })
export type RecoverRequest = typeof RecoverRequest.Type

/** How many failed deliveries since `since` were queued again. */
export const RecoverResult = Schema.Struct({ count: Schema.Int })
export type RecoverResult = typeof RecoverResult.Type

const EndpointIdParam = { endpointId: ResourceId }

/**
 * Unpinned keys only. `resend` answers 202 with the new delivery (same `eventId`, queued at the
 * lane's tail); a trigger event whose payload is gone is 409. `recover` answers 202 `{count}`.
 */
export class WebhookRecoveryApi extends HttpApiGroup.make("webhookRecovery")
  .add(
    HttpApiEndpoint.post("resend", "/v1/webhooks/:endpointId/deliveries/:deliveryId/resend", {
      params: { ...EndpointIdParam, deliveryId: ResourceId },
      success: WebhookDelivery.pipe(HttpApiSchema.status(202))
    }),
    HttpApiEndpoint.post("recover", "/v1/webhooks/:endpointId/recover", {
      params: EndpointIdParam,
      payload: RecoverRequest,
      success: RecoverResult.pipe(HttpApiSchema.status(202))
    })
  ) {}
