/**
 * The HTTP API contract: groups and endpoints, no handlers. The client library and the server
 * both build on it. Payloads are closed: unknown fields are rejected.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { ConnectionsApi } from "./ConnectionsApi.ts"
import { Authentication, ErrorEnvelope, RateLimit } from "./Middleware.ts"
import { FilesApi } from "./FilesApi.ts"
import { ExecutionsApi } from "./ExecutionsApi.ts"
import { SubscriptionsApi, TriggerEventsApi, WebhookRecoveryApi } from "./SubscriptionsApi.ts"
import { HealthApi, SystemApi } from "./SystemApi.ts"
import { WebhooksApi } from "./WebhooksApi.ts"

// Middleware added last runs first: the envelope, then authentication, then the rate limit.
export class Api extends HttpApi.make("service")
  .add(SystemApi.middleware(RateLimit).middleware(Authentication))
  .add(ConnectionsApi.middleware(RateLimit).middleware(Authentication))
  .add(FilesApi.middleware(RateLimit).middleware(Authentication))
  .add(WebhooksApi.middleware(RateLimit).middleware(Authentication))
  .add(ExecutionsApi.middleware(RateLimit).middleware(Authentication))
  .add(SubscriptionsApi.middleware(RateLimit).middleware(Authentication))
  .add(TriggerEventsApi.middleware(RateLimit).middleware(Authentication))
  .add(WebhookRecoveryApi.middleware(RateLimit).middleware(Authentication))
  .middleware(ErrorEnvelope)
  .add(HealthApi.middleware(ErrorEnvelope))
  .annotate(HttpApi.ParseOptions, { onExcessProperty: "error" })
  .annotate(HttpApi.HeadersParseOptions, {})
  .annotateMerge(OpenApi.annotations({
    title: "Service API",
    description: "Runs catalog tools for project users, stages files, and delivers signed webhooks. " +
      "Every error is `{error: {code, message, retryable, retryAfter?}, requestId}`."
  }))
{}
