/**
 * Webhook endpoints (spec, "Webhook endpoints"; decisions.md section 6): unpinned project keys
 * only. Secrets appear only in the create and rotate-secret answers.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { UnpinnedOnly } from "./Middleware.ts"
import { described, pageQuery } from "./Query.ts"
import { PathId } from "./PathId.ts"

const Url = Schema.String.check(Schema.isMaxLength(2048))
const Events = Schema.Array(Schema.String.check(Schema.isMaxLength(200))).check(Schema.isMaxLength(64))

export const WebhookEndpoint = Schema.Struct({
  endpointId: Schema.String,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  active: Schema.Boolean,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  secretPrefix: Schema.String
})
export type WebhookEndpoint = typeof WebhookEndpoint.Type

export const CreatedWebhookEndpoint = Schema.Struct({ ...WebhookEndpoint.fields, secret: Schema.String })

export const RotatedSecret = Schema.Struct({ endpointId: Schema.String, secret: Schema.String, secretPrefix: Schema.String })

export const CreateWebhookRequest = Schema.Struct({
  url: Url,
  events: Events,
  active: Schema.optionalKey(Schema.Boolean)
})

export const UpdateWebhookRequest = Schema.Struct({
  url: Schema.optionalKey(Url),
  events: Schema.optionalKey(Events),
  active: Schema.optionalKey(Schema.Boolean)
})

const Attempt = Schema.Union([
  Schema.Struct({ attemptedAt: Schema.String, statusCode: Schema.Int }),
  Schema.Struct({ attemptedAt: Schema.String, error: Schema.String })
])

export const WebhookDelivery = Schema.Struct({
  deliveryId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  endpointId: Schema.String,
  status: Schema.Literals(["pending", "delivering", "succeeded", "failed"]),
  attempts: Schema.Array(Attempt),
  nextRetryAt: Schema.optionalKey(Schema.String),
  completedAt: Schema.optionalKey(Schema.String)
})

const EndpointIdParam = { endpointId: PathId }

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/v1/webhooks", {
      payload: CreateWebhookRequest,
      success: CreatedWebhookEndpoint.pipe(HttpApiSchema.status(201))
    }).annotateMerge(described(
      "Create a webhook endpoint",
      "An HTTPS URL and the event types it receives (`execution.completed` for all three execution types, an exact " +
        "type, `trigger.*`, or `trigger.<toolkit>.<name>`). The answer holds the signing secret, shown this once."
    )),
    HttpApiEndpoint.get("list", "/v1/webhooks", {
      query: pageQuery,
      success: Schema.Struct({ webhooks: Schema.Array(WebhookEndpoint), nextCursor: Schema.optionalKey(Schema.String) })
    }).annotateMerge(described("List webhook endpoints", "Newest first; no secrets.")),
    HttpApiEndpoint.get("get", "/v1/webhooks/:endpointId", { params: EndpointIdParam, success: WebhookEndpoint })
      .annotateMerge(described("Get a webhook endpoint", "Without its secret.")),
    HttpApiEndpoint.patch("update", "/v1/webhooks/:endpointId", {
      params: EndpointIdParam,
      payload: UpdateWebhookRequest,
      success: WebhookEndpoint
    }).annotateMerge(described(
      "Update a webhook endpoint",
      "Any non-empty combination of url, events and active. Unfinished deliveries use the new values at their next " +
        "attempt; deactivating stops them."
    )),
    HttpApiEndpoint.post("rotateSecret", "/v1/webhooks/:endpointId/rotate-secret", {
      params: EndpointIdParam,
      success: RotatedSecret
    }).annotateMerge(described("Rotate the signing secret", "The new secret, shown this once; the old one stops signing at once.")),
    HttpApiEndpoint.delete("remove", "/v1/webhooks/:endpointId", { params: EndpointIdParam, success: HttpApiSchema.NoContent })
      .annotateMerge(described("Delete a webhook endpoint", "Unfinished deliveries stop; its delivery history is no longer reachable.")),
    HttpApiEndpoint.get("deliveries", "/v1/webhooks/:endpointId/deliveries", {
      params: EndpointIdParam,
      query: pageQuery,
      success: Schema.Struct({ deliveries: Schema.Array(WebhookDelivery), nextCursor: Schema.optionalKey(Schema.String) })
    }).annotateMerge(described(
      "List an endpoint's deliveries",
      "Newest first: status, attempts (status code or a sanitized transport error), next retry. Never a payload, a " +
        "secret, or a receiver's headers or body."
    ))
  )
  .annotate(UnpinnedOnly, true)
  .annotateMerge(OpenApi.annotations({
    description: "Unpinned keys only. Signed deliveries of execution and trigger events, at least once, in order per endpoint."
  })) {}
