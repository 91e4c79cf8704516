/**
 * Trigger subscriptions and trigger-event history (spec, "Subscriptions", "Trigger event
 * history"; decisions.md section 5) and the webhook recovery extension (decisions.md section 9).
 * Declared before they were served, so that the client library could type them first; `Api.ts`
 * adds each group, and the handlers live in http/server/. The push ingest route is served beside
 * the API (http/server/IngestHttp.ts): it takes no API key and answers provider bodies.
 */
import { Schema } from "effect"
import { UserIdText } from "../../domain/Ids.ts"
import { parseIsoDateTime } from "../../domain/Time.ts"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { StateConflict } from "../../domain/Errors.ts"
import { JsonObject } from "../../domain/JsonObject.ts"
import { UnpinnedOnly } from "./Middleware.ts"
import { described, pageQuery } from "./Query.ts"
import { WebhookDelivery } from "./WebhooksApi.ts"
import { PathId } from "./PathId.ts"
import { UserHeader } from "./UserHeader.ts"

const ResourceId = Schema.String.check(Schema.isMaxLength(100))
/** A canonical dotted trigger name, `<toolkit>.<name>`. */
const TriggerName = Schema.String.check(Schema.isMaxLength(200))
const TIMESTAMP_EXPECTED = "expected an ISO 8601 time such as 2026-01-01T00:00:00.000Z"
/** ISO 8601 with a time and an offset, naming a real instant: what every time in the API looks like. */
const Timestamp = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/u, { message: TIMESTAMP_EXPECTED }),
  Schema.makeFilter((text: string) => !Number.isNaN(parseIsoDateTime(text)), { message: TIMESTAMP_EXPECTED })
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
  userId: Schema.optionalKey(UserIdText),
  connectionId: Schema.optionalKey(ResourceId),
  webhookEndpointIds: Schema.Array(ResourceId).check(Schema.isMinLength(1), Schema.isMaxLength(20)),
  filters: Schema.optionalKey(JsonObject),
  // The range's lower bound is configuration (SERVICE_TRIGGER_MIN_POLL_SECONDS): the service checks
  // the range and names it, whichever side a value falls on.
  pollIntervalSeconds: Schema.optionalKey(Schema.Int.annotate({ description: "Seconds between polls: SERVICE_TRIGGER_MIN_POLL_SECONDS (30 by default) to 86400; default 60." }))
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

const SubscriptionIdParam = { subscriptionId: PathId }

export class SubscriptionsApi extends HttpApiGroup.make("subscriptions")
  .add(
    HttpApiEndpoint.post("create", "/v1/subscriptions", {
      payload: CreateSubscriptionRequest,
      headers: UserHeader,
      success: CreatedSubscription.pipe(HttpApiSchema.status(201))
    }).annotateMerge(described(
      "Subscribe a user to a trigger",
      "A catalog trigger, the user (body, X-Service-User-Id, or the pinned key's), its connection when the toolkit takes " +
        "one, 1 to 20 webhook endpoints subscribed to the trigger or `trigger.*`, the trigger's filters, and for a polling " +
        "trigger its cadence. A push subscription's answer holds its secret ingest URL, shown this once."
    )),
    HttpApiEndpoint.get("list", "/v1/subscriptions", {
      query: { ...pageQuery, userId: Schema.optionalKey(Schema.String) },
      headers: UserHeader,
      success: SubscriptionPage
    }).annotateMerge(described(
      "List subscriptions",
      "Newest first. A pinned key lists its user's; an unpinned key the named user's, or the whole project's. Never an ingest URL."
    )),
    HttpApiEndpoint.get("get", "/v1/subscriptions/:subscriptionId", { params: SubscriptionIdParam, success: Subscription })
      .annotateMerge(described("Get a subscription", "Without its ingest URL; another user's (for a pinned key) or project's is 404.")),
    HttpApiEndpoint.post("rotateSecret", "/v1/subscriptions/:subscriptionId/rotate-secret", {
      params: SubscriptionIdParam,
      success: RotatedIngestUrl
    }).annotateMerge(described(
      "Rotate a subscription's ingest secret",
      "A new ingest URL, shown this once; the old one stops authenticating at once. Polling subscriptions have none (422)."
    )),
    HttpApiEndpoint.delete("remove", "/v1/subscriptions/:subscriptionId", {
      params: SubscriptionIdParam,
      success: HttpApiSchema.NoContent
    }).annotateMerge(described(
      "Delete a subscription",
      "Ingestion and polling stop; its dedup claims and polling cursor go; its history rows stay until they expire."
    ))
  )
  .annotateMerge(OpenApi.annotations({
    description: "Trigger subscriptions: a user's events of a catalog trigger, pushed to a secret ingest URL or polled, delivered as signed webhooks."
  })) {}

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
    }).annotateMerge(described(
      "List trigger events",
      "One row per arrival, duplicates included, newest first, for 7 days: dedup and delivery status, targets. Metadata " +
        "only: never a payload, a provider event id or a secret. Unpinned keys only."
    ))
  )
  .annotate(UnpinnedOnly, true)
  .annotateMerge(OpenApi.annotations({ description: "The history of trigger arrivals. Unpinned keys only." })) {}

// --- Webhook recovery (decisions.md section 9, an extension) --------------------------------

export const RecoverRequest = Schema.Struct({ since: Timestamp })
export type RecoverRequest = typeof RecoverRequest.Type

/** How many events of failed deliveries since `since` were queued again (those not since brought or being brought). */
export const RecoverResult = Schema.Struct({ count: Schema.Int })
export type RecoverResult = typeof RecoverResult.Type

const EndpointIdParam = { endpointId: PathId }

/**
 * Unpinned keys only. `resend` answers 202 with the new delivery (same `eventId`, queued at the
 * lane's tail); a trigger event whose payload is gone is 409. `recover` answers 202 `{count}`.
 * Both are 409 for an inactive endpoint, which would fail at once whatever they queued.
 */
export class WebhookRecoveryApi extends HttpApiGroup.make("webhookRecovery")
  .add(
    HttpApiEndpoint.post("resend", "/v1/webhooks/:endpointId/deliveries/:deliveryId/resend", {
      params: { ...EndpointIdParam, deliveryId: PathId },
      success: WebhookDelivery.pipe(HttpApiSchema.status(202)),
      error: StateConflict
    }).annotateMerge(described(
      "Resend a delivery",
      "A new delivery of the same event (same eventId) at the end of the endpoint's queue. A trigger event whose payload " +
        "is gone (payloads are kept only by the process that received them) is 409, and so is an inactive endpoint."
    )),
    HttpApiEndpoint.post("recover", "/v1/webhooks/:endpointId/recover", {
      params: EndpointIdParam,
      payload: RecoverRequest,
      success: RecoverResult.pipe(HttpApiSchema.status(202)),
      error: StateConflict
    }).annotateMerge(described(
      "Recover failed deliveries",
      "The events of the endpoint's deliveries that failed and were queued since `since` are queued again, once each and " +
        "oldest first, leaving out every event that a later delivery to the endpoint brought (succeeded) or is still " +
        "bringing (open); the answer counts those queued. So after a resend that worked, or right after an earlier " +
        "recover, nothing is sent twice: a second recover with the same `since` counts 0. A trigger event whose payload " +
        "is gone is skipped (not counted). The failed deliveries themselves stay failed. An inactive endpoint is 409."
    ))
  )
  .annotate(UnpinnedOnly, true)
  .annotateMerge(OpenApi.annotations({ description: "Resending deliveries (an extension). Unpinned keys only." })) {}
