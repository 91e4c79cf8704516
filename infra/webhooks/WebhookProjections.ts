/**
 * Inline views of webhook endpoints and deliveries, read right after writes (a GET after a POST)
 * and by the delivery lanes before every attempt. The endpoint row keeps the secret sealed; the
 * delivery row keeps metadata only.
 */
import { Schema } from "effect"
import type { DeliveryQueued, DeliveryRecord } from "../../domain/webhooks/WebhookDelivery.ts"
import { Attempt, DELIVERY_STREAM_TYPE, deliveryCodec, DeliveryStatus, deliveryStreamId, SourceRef } from "../../domain/webhooks/WebhookDelivery.ts"
import type { Endpoint } from "../../domain/webhooks/WebhookEndpoint.ts"
import { ENDPOINT_STREAM_TYPE, endpointCodec } from "../../domain/webhooks/WebhookEndpoint.ts"
import type { Json, RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, Row, RowChange } from "../eventlog/Projection.ts"

/**
 * Absent times are stored as "" rather than NULL: the Postgres view store binds each column of a
 * batch as one array, and an array holding only nulls cannot be typed.
 */
const NONE = ""

export const ENDPOINTS_TABLE = "webhook_endpoints"
export const DELIVERIES_TABLE = "webhook_deliveries"

const endpointChanges = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  const event = endpointCodec.decode(recorded)
  const endpointId = recorded.streamId.slice(ENDPOINT_STREAM_TYPE.length + 1)
  const key = { endpoint_id: endpointId }
  switch (event.type) {
    case "EndpointCreated":
      return [{
        op: "upsert",
        table: ENDPOINTS_TABLE,
        row: {
          endpoint_id: endpointId,
          project_id: event.projectId,
          url: event.url,
          events: event.events,
          active: event.active,
          sealed_secret: event.sealedSecret,
          secret_prefix: event.secretPrefix,
          created_at: event.at,
          updated_at: event.at
        }
      }]
    case "EndpointUpdated": {
      const set: Record<string, Json> = { updated_at: event.at }
      if (event.url !== undefined) set.url = event.url
      if (event.events !== undefined) set.events = event.events
      if (event.active !== undefined) set.active = event.active
      return [{ op: "update", table: ENDPOINTS_TABLE, key, set }]
    }
    case "EndpointSecretRotated":
      return [{ op: "update", table: ENDPOINTS_TABLE, key, set: { sealed_secret: event.sealedSecret, secret_prefix: event.secretPrefix, updated_at: event.at } }]
    case "EndpointDeleted":
      return [{ op: "delete", table: ENDPOINTS_TABLE, key }]
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
  const data = deliveryCodec.decode(event)
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
          source: data.source,
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
        set: { status: "succeeded", open: false, attempts: data.attempts, next_retry_at: NONE, completed_at: data.completedAt ?? data.attemptedAt }
      }]
    case "DeliveryAttemptFailed":
      return [{
        op: "update",
        table: DELIVERIES_TABLE,
        key,
        set: { status: "delivering", open: true, attempts: data.attempts, next_retry_at: data.nextRetryAt ?? NONE, completed_at: NONE }
      }]
    case "DeliveryGivenUp":
      return [{ op: "update", table: DELIVERIES_TABLE, key, set: { status: "failed", open: false, next_retry_at: NONE, completed_at: data.at } }]
    case "DeliveryAbandoned": {
      const stopped: RowChange = { op: "update", table: DELIVERIES_TABLE, key, set: { status: "failed", open: false, next_retry_at: NONE, completed_at: data.at } }
      // An endpoint deactivated or deleted stops its unfinished deliveries with no further
      // attempts (interface.md, Webhook delivery), so none is recorded. An event that can no
      // longer be read shows why as its last attempt's error, as decisions.md section 5 has it
      // for a trigger event's lost payload (`payload_unavailable`).
      return data.reason === "endpoint_inactive" || data.reason === "endpoint_deleted"
        ? [stopped]
        : [stopped, { op: "append", table: DELIVERIES_TABLE, key, column: "attempts", value: { attemptedAt: data.at, error: data.reason } }]
    }
  }
}

/** The stream a delivery's event comes from: its execution's, or its trigger arrival's. */
const sourceStreamOf = (row: Row): string => {
  const streamId = (row.source as { readonly streamId?: unknown } | null)?.streamId
  return typeof streamId === "string" ? streamId : ""
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
    indexes: [["endpoint_id", "source_position", "delivery_id"], ["open", "endpoint_id", "source_position"]],
    // Memory mode drops deliveries finished before the retention window
    // (infra/eventlog/MemoryRetention.ts); open ones stay until they finish, and hold the
    // execution or trigger arrival they will send (its record, its stream; for an arrival its
    // history row and its other deliveries, which the row shows), however long they wait.
    retention: {
      since: (row) => Date.parse(String(row.queued_at)),
      finished: (row) => row.open === false,
      finishedAt: (row) => (typeof row.completed_at === "string" ? Date.parse(row.completed_at) : Date.parse(String(row.queued_at))),
      stream: (row) => deliveryStreamId(String(row.delivery_id)),
      source: (row) => (String(row.event_type).startsWith("trigger.") ? sourceStreamOf(row) : undefined),
      holds: {
        query: { where: [{ column: "open", op: "=", value: true }], orderBy: [{ column: "queued_at", direction: "asc" }], limit: Number.MAX_SAFE_INTEGER },
        stream: sourceStreamOf
      }
    }
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

/** The columns of a `webhook_deliveries` row that a reader uses, as the projection above writes them. */
const DeliveryColumns = Schema.Struct({
  delivery_id: Schema.String,
  event_id: Schema.String,
  event_type: Schema.String,
  endpoint_id: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Array(Attempt),
  next_retry_at: Schema.String,
  completed_at: Schema.String,
  project_id: Schema.String,
  source: SourceRef,
  source_position: Schema.String,
  queued_at: Schema.String
})
const decodeDeliveryColumns = Schema.decodeUnknownSync(DeliveryColumns)

/** A delivery row, decoded: a row this code did not write fails here with the schema's message. */
export const deliveryFromRow = (row: Row): DeliveryRow => {
  const columns = decodeDeliveryColumns(row)
  return {
    deliveryId: columns.delivery_id,
    eventId: columns.event_id,
    eventType: columns.event_type,
    endpointId: columns.endpoint_id,
    status: columns.status,
    attempts: columns.attempts,
    ...(columns.next_retry_at !== NONE ? { nextRetryAt: columns.next_retry_at } : {}),
    ...(columns.completed_at !== NONE ? { completedAt: columns.completed_at } : {}),
    projectId: columns.project_id,
    sourceStreamId: columns.source.streamId,
    sourceVersion: columns.source.version,
    sourcePosition: columns.source_position,
    queuedAt: columns.queued_at
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
