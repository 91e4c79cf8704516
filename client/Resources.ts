/**
 * The resource shapes the client reads and writes. Everything the server contract declares is
 * imported from it (`http/api/*Api.ts`, `domain/*`), so a contract change breaks the client at
 * compile time. Pages that a contract declares inline are rebuilt here from its item schemas
 * (test/client/Contract.test.ts checks that they stay the contract's types). Routes that are
 * specified but not served yet take their shapes from `http/api/SubscriptionsApi.ts`.
 */
import { Schema } from "effect"
import { Connection, type CreateConnection } from "../http/api/ConnectionsApi.ts"
import type { CreateSubscriptionRequest, RecoverRequest } from "../http/api/SubscriptionsApi.ts"
import { Me } from "../http/api/SystemApi.ts"
import {
  CreatedWebhookEndpoint,
  type CreateWebhookRequest as CreateWebhookRequestSchema,
  RotatedSecret,
  type UpdateWebhookRequest as UpdateWebhookRequestSchema,
  WebhookDelivery,
  WebhookEndpoint
} from "../http/api/WebhooksApi.ts"
import type { ExecutionStatus } from "../domain/executions/ExecutionRecord.ts"

// Both the schema and its type, straight from the contract.
export { Connection } from "../http/api/ConnectionsApi.ts"
export { ExecuteRequest } from "../http/api/ExecutionsApi.ts"
export { ExecutionPage, ExecutionRecord, ExecutionStatus } from "../domain/executions/ExecutionRecord.ts"
export { Me }

export type Me = typeof Me.Type
export type CreateConnectionRequest = typeof CreateConnection.Type

export const ConnectionPage = Schema.Struct({ connections: Schema.Array(Connection), nextCursor: Schema.optionalKey(Schema.String) })
export type ConnectionPage = typeof ConnectionPage.Type

/** Staged file metadata and pages: the same schemas the service answers with. */
export { FileMetadata, FilePage } from "../domain/files/Files.ts"

// Webhook endpoints and their deliveries (unpinned keys only).
export { WebhookEndpoint } from "../http/api/WebhooksApi.ts"
/** The create answer: the endpoint and its signing secret (`whsec_…`), shown this once. */
export { CreatedWebhookEndpoint }
export type CreatedWebhookEndpoint = typeof CreatedWebhookEndpoint.Type
/** The rotate-secret answer: the new secret; the old one stops signing at once. */
export const RotatedWebhookSecret = RotatedSecret
export type RotatedWebhookSecret = typeof RotatedSecret.Type
export { WebhookDelivery }
export type WebhookDelivery = typeof WebhookDelivery.Type
export type CreateWebhookRequest = typeof CreateWebhookRequestSchema.Type
/** PATCH: any non-empty combination of url, events, active. */
export type UpdateWebhookRequest = typeof UpdateWebhookRequestSchema.Type

export const WebhookPage = Schema.Struct({ webhooks: Schema.Array(WebhookEndpoint), nextCursor: Schema.optionalKey(Schema.String) })
export type WebhookPage = typeof WebhookPage.Type

export const DeliveryPage = Schema.Struct({ deliveries: Schema.Array(WebhookDelivery), nextCursor: Schema.optionalKey(Schema.String) })
export type DeliveryPage = typeof DeliveryPage.Type

// Trigger subscriptions, trigger events and webhook recovery (http/api/SubscriptionsApi.ts).
export {
  CreatedSubscription,
  RecoverResult,
  RotatedIngestUrl,
  Subscription,
  SubscriptionPage,
  TriggerEvent,
  TriggerEventPage
} from "../http/api/SubscriptionsApi.ts"
export type { CreateSubscriptionRequest }

export interface RecoverOptions {
  /** Failed deliveries since this time are queued again (ISO 8601 string or a Date). */
  readonly since: RecoverRequest["since"] | Date
}

export interface CreateFileRequest {
  readonly name: string
  /** The bytes, or their standard base64 encoding. */
  readonly content: Uint8Array | string
  readonly mimeType?: string | undefined
}

/** Optional fields take `undefined` too, so a page's `nextCursor` can be passed as it is. */
export interface PageQuery {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

export interface ConnectionListQuery extends PageQuery {
  readonly userId?: string | undefined
}

export interface SubscriptionListQuery extends PageQuery {
  readonly userId?: string | undefined
}

export interface TriggerEventListQuery extends PageQuery {
  /** An exact `trgsub_*` id. */
  readonly subscriptionId?: string | undefined
  /** An exact canonical trigger name, e.g. `demo.event`. */
  readonly trigger?: string | undefined
}

export interface ExecutionListQuery extends PageQuery {
  readonly status?: ExecutionStatus | undefined
  readonly tool?: string | undefined
  readonly userId?: string | undefined
}

export interface WaitOptions {
  /** Delay between polls; default 500 ms, at least 20 ms. */
  readonly pollMs?: number | undefined
  /** Give up with a `timeout` ServiceError after this long; default 60000 ms. */
  readonly timeoutMs?: number | undefined
}

/** Standard base64 without Node's Buffer, so that browsers can use the client too. */
export const toBase64 = (bytes: Uint8Array): string => {
  let binary = ""
  const chunk = 0x8000
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk))
  return btoa(binary)
}
