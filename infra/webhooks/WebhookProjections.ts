/**
 * Inline views of webhook endpoints and deliveries, read right after writes (a GET after a POST)
 * and by the delivery lanes before every attempt. The endpoint row keeps the secret sealed; the
 * delivery row keeps metadata only.
 */
import type { DeliveryEvent, DeliveryQueued, DeliveryRecord } from "../../domain/webhooks/WebhookDelivery.ts"
import { DELIVERY_STREAM_TYPE } from "../../domain/webhooks/WebhookDelivery.ts"
import type { Endpoint, EndpointEvent } from "../../domain/webhooks/WebhookEndpoint.ts"
import { ENDPOINT_STREAM_TYPE } from "../../domain/webhooks/WebhookEndpoint.ts"
import type { Json, RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, Row, RowChange } from "../eventlog/Projection.ts"

/**
 * Absent times are stored as "" rather than NULL: the Postgres view store binds each column of a
 * batch as one array, and an array holding only nulls cannot be typed.
 */
const NONE = ""

export const ENDPOINTS_TABLE = "webhook_endpoints"
export const DELIVERIES_TABLE = "webhook_deliveries"

const endpointChanges = (event: RecordedEvent): ReadonlyArray<RowChange> => {
  const data = event.data as unknown as EndpointEvent
  const endpointId = event.streamId.slice(ENDPOINT_STREAM_TYPE.length + 1)
  const key = { endpoint_id: endpointId }
  switch (event.type) {
    case "EndpointCreated": {
      const e = data as Extract<EndpointEvent, { type: "EndpointCreated" }>
      return [{
        op: "upsert",
        table: ENDPOINTS_TABLE,
        row: {
          endpoint_id: endpointId,
          project_id: e.projectId,
          url: e.url,
          events: e.events as Json,
          active: e.active,
          sealed_secret: e.sealedSecret,
          secret_prefix: e.secretPrefix,
          created_at: e.at,
          updated_at: e.at
        }
      }]
    }
    case "EndpointUpdated": {
      const e = data as Extract<EndpointEvent, { type: "EndpointUpdated" }>
      const set: Record<string, Json> = { updated_at: e.at }
      if (e.url !== undefined) set.url = e.url
      if (e.events !== undefined) set.events = e.events as Json
      if (e.active !== undefined) set.active = e.active
      return [{ op: "update", table: ENDPOINTS_TABLE, key, set }]
    }
    case "EndpointSecretRotated": {
      const e = data as Extract<EndpointEvent, { type: "EndpointSecretRotated" }>
      return [{ op: "update", table: ENDPOINTS_TABLE, key, set: { sealed_secret: e.sealedSecret, secret_prefix: e.secretPrefix, updated_at: e.at } }]
    }
    case "EndpointDeleted":
      return [{ op: "delete", table: ENDPOINTS_TABLE, key }]
    default:
      return []
  }
}

export const webhookEndpointsProjection: Projection = {
  name: "webhook_endpoints",
  mode: "inline",
  streamTypes: [ENDPOINT_STREAM_TYPE],
  tables: [{
    name: ENDPOINTS_TABLE,
    columns: {
      endpoint_id: "text",
      project_id: "text",
      url: "text",
      events: "jsonb",
      active: "boolean",
      sealed_secret: "text",
      secret_prefix: "text",
      created_at: "text",
      updated_at: "text"
    },
    primaryKey: ["endpoint_id"],
    indexes: [["project_id", "endpoint_id"]]
  }],
  project: endpointChanges
}

const deliveryChanges = (event: RecordedEvent): ReadonlyArray<RowChange> => {
  const data = event.data as unknown as DeliveryEvent
  const key = { delivery_id: event.streamId.slice(DELIVERY_STREAM_TYPE.length + 1) }
  switch (data.type) {
    case "DeliveryQueued":
      return [{
        op: "upsert",
        table: DELIVERIES_TABLE,
        row: {
          delivery_id: data.deliveryId,
          endpoint_id: data.endpointId,
          project_id: data.projectId,
          event_id: data.eventId,
          event_type: data.eventType,
          source: data.source as unknown as Json,
          source_position: data.source.position,
          status: "pending",
          open: true,
          attempts: [],
          next_retry_at: NONE,
          completed_at: NONE,
          queued_at: data.queuedAt
        }
      }]
    // One update of the same columns per attempt, whatever its outcome (see DeliveryAttemptSucceeded).
    case "DeliveryAttemptSucceeded":
      return [{
        op: "update",
        table: DELIVERIES_TABLE,
        key,
        set: { status: "succeeded", open: false, attempts: data.attempts as unknown as Json, next_retry_at: NONE, completed_at: data.attemptedAt }
      }]
    case "DeliveryAttemptFailed":
      return [{
        op: "update",
        table: DELIVERIES_TABLE,
        key,
        set: { status: "delivering", open: true, attempts: data.attempts as unknown as Json, next_retry_at: data.nextRetryAt ?? NONE, completed_at: NONE }
      }]
    case "DeliveryGivenUp":
    case "DeliveryAbandoned":
      return [{ op: "update", table: DELIVERIES_TABLE, key, set: { status: "failed", open: false, next_retry_at: NONE, completed_at: data.at } }]
  }
}

export const webhookDeliveriesProjection: Projection = {
  name: "webhook_deliveries",
  mode: "inline",
  streamTypes: [DELIVERY_STREAM_TYPE],
  tables: [{
    name: DELIVERIES_TABLE,
    columns: {
      delivery_id: "text",
      endpoint_id: "text",
      project_id: "text",
      event_id: "text",
      event_type: "text",
      source: "jsonb",
      source_position: "text",
      status: "text",
      open: "boolean",
      attempts: "jsonb",
      next_retry_at: "text",
      completed_at: "text",
      queued_at: "text"
    },
    primaryKey: ["delivery_id"],
    indexes: [["endpoint_id", "source_position", "delivery_id"], ["open", "endpoint_id", "source_position"]]
  }],
  project: deliveryChanges
}

const text = (row: Row, column: string): string => {
  const value = row[column]
  return typeof value === "string" ? value : String(value ?? "")
}

/** A live endpoint as its view row holds it: the actor's state without the deletion flag. */
export type EndpointRow = Omit<Endpoint, "deleted">

export const endpointFromRow = (row: Row): EndpointRow => ({
  endpointId: text(row, "endpoint_id"),
  projectId: text(row, "project_id"),
  url: text(row, "url"),
  events: Array.isArray(row.events) ? row.events.filter((e): e is string => typeof e === "string") : [],
  active: row.active === true,
  sealedSecret: text(row, "sealed_secret"),
  secretPrefix: text(row, "secret_prefix"),
  createdAt: text(row, "created_at"),
  updatedAt: text(row, "updated_at")
})

export interface DeliveryRow extends DeliveryRecord {
  readonly projectId: string
  readonly sourceStreamId: string
  readonly sourceVersion: number
  readonly sourcePosition: string
  readonly queuedAt: string
}

export const deliveryFromRow = (row: Row): DeliveryRow => {
  const source = (row.source ?? {}) as { readonly streamId?: string; readonly version?: number }
  const nextRetryAt = row.next_retry_at
  const completedAt = row.completed_at
  return {
    deliveryId: text(row, "delivery_id"),
    eventId: text(row, "event_id"),
    eventType: text(row, "event_type"),
    endpointId: text(row, "endpoint_id"),
    status: text(row, "status") as DeliveryRecord["status"],
    attempts: (Array.isArray(row.attempts) ? row.attempts : []) as unknown as DeliveryRecord["attempts"],
    ...(typeof nextRetryAt === "string" && nextRetryAt !== NONE ? { nextRetryAt } : {}),
    ...(typeof completedAt === "string" && completedAt !== NONE ? { completedAt } : {}),
    projectId: text(row, "project_id"),
    sourceStreamId: source.streamId ?? "",
    sourceVersion: source.version ?? 0,
    sourcePosition: text(row, "source_position"),
    queuedAt: text(row, "queued_at")
  }
}

/** A just-queued delivery as its view row reads back (what the dispatcher hands to a lane). */
export const deliveryRowOf = (queued: DeliveryQueued): DeliveryRow => ({
  deliveryId: queued.deliveryId,
  eventId: queued.eventId,
  eventType: queued.eventType,
  endpointId: queued.endpointId,
  status: "pending",
  attempts: [],
  projectId: queued.projectId,
  sourceStreamId: queued.source.streamId,
  sourceVersion: queued.source.version,
  sourcePosition: queued.source.position,
  queuedAt: queued.queuedAt
})

/** The public record: exactly the spec's fields. */
export const publicDelivery = (row: DeliveryRow): DeliveryRecord => ({
  deliveryId: row.deliveryId,
  eventId: row.eventId,
  eventType: row.eventType,
  endpointId: row.endpointId,
  status: row.status,
  attempts: row.attempts,
  ...(row.nextRetryAt !== undefined ? { nextRetryAt: row.nextRetryAt } : {}),
  ...(row.completedAt !== undefined ? { completedAt: row.completedAt } : {})
})
