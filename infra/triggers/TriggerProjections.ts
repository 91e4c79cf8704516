/**
 * Inline views of trigger subscriptions and of the trigger event history, read right after a
 * write (a GET after a POST, the ingest path after a rotation).
 *
 * The history is two tables, each written by a projection of its own with one kind of change:
 * `trigger_events` (the arrival's metadata, written once) and `trigger_event_progress` (its phase
 * and targets, rewritten whole). A commit of the event log then changes each table with one
 * statement, even when it carries new arrivals and the targets of earlier ones together: two
 * kinds of change to one table would split the commit into several statements
 * (infra/eventlog/PgEventStore.ts). Sweeps delete from both.
 *
 * The subscription row keeps the ingest secret's hash (never the secret), which the public form
 * leaves out, as it leaves out the provider cursor (infra/triggers/PollCursors.ts).
 */
import { Schema } from "effect"
import { SUBSCRIPTION_STREAM_TYPE, subscriptionCodec, type Subscription } from "../../domain/triggers/Subscription.ts"
import { DeliveryMode } from "../../domain/triggers/Subscription.ts"
import {
  ARRIVAL_STREAM_TYPE,
  arrivalCodec,
  arrivalStreamId,
  DedupStatus,
  DeliveryTarget,
  HISTORY_TTL_MS,
  type Phase,
  phaseOf,
  SWEEP_STREAM_TYPE,
  sweepCodec
} from "../../domain/triggers/TriggerEvent.ts"
import { JsonObject } from "../../domain/JsonObject.ts"
import { idTimeMs } from "../../domain/Ids.ts"
import { isoTime } from "../../domain/Time.ts"
import type { RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, Row, RowChange } from "../eventlog/Projection.ts"

export const SUBSCRIPTIONS_TABLE = "trigger_subscriptions"
export const EVENTS_TABLE = "trigger_events"
export const PROGRESS_TABLE = "trigger_event_progress"

const subscriptionChanges = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  const event = subscriptionCodec.decode(recorded)
  const key = { subscription_id: recorded.streamId.slice(SUBSCRIPTION_STREAM_TYPE.length + 1) }
  switch (event.type) {
    case "SubscriptionCreated":
      return [{
        op: "upsert",
        table: SUBSCRIPTIONS_TABLE,
        row: {
          subscription_id: event.subscriptionId,
          project_id: event.projectId,
          user_id: event.userId,
          trigger: event.trigger,
          delivery_mode: event.deliveryMode,
          connection_id: event.connectionId ?? null,
          webhook_endpoint_ids: event.webhookEndpointIds,
          filters: event.filters,
          poll_interval_seconds: event.pollIntervalSeconds ?? null,
          secret_hash: event.secretHash ?? null,
          status: "active",
          created_at: event.at,
          updated_at: event.at
        }
      }]
    case "SubscriptionSecretRotated":
      return [{ op: "update", table: SUBSCRIPTIONS_TABLE, key, set: { secret_hash: event.secretHash, updated_at: event.at } }]
    case "SubscriptionDeleted":
      return [{ op: "delete", table: SUBSCRIPTIONS_TABLE, key }]
  }
}

export const subscriptionsProjection: Projection = {
  name: "trigger_subscriptions",
  mode: "inline",
  streamTypes: [SUBSCRIPTION_STREAM_TYPE],
  tables: [{
    name: SUBSCRIPTIONS_TABLE,
    columns: {
      subscription_id: "text",
      project_id: "text",
      user_id: "text",
      trigger: "text",
      delivery_mode: "text",
      connection_id: "text",
      webhook_endpoint_ids: "jsonb",
      filters: "jsonb",
      poll_interval_seconds: "bigint",
      secret_hash: "text",
      status: "text",
      created_at: "text",
      updated_at: "text"
    },
    nullable: ["connection_id", "poll_interval_seconds", "secret_hash"],
    primaryKey: ["subscription_id"],
    indexes: [["project_id", "-subscription_id"], ["project_id", "user_id", "-subscription_id"], ["delivery_mode", "subscription_id"]]
  }],
  project: subscriptionChanges
}

const SubscriptionColumns = Schema.Struct({
  subscription_id: Schema.String,
  project_id: Schema.String,
  user_id: Schema.String,
  trigger: Schema.String,
  delivery_mode: DeliveryMode,
  connection_id: Schema.NullOr(Schema.String),
  webhook_endpoint_ids: Schema.Array(Schema.String),
  filters: JsonObject,
  poll_interval_seconds: Schema.NullOr(Schema.Number),
  secret_hash: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
const decodeSubscriptionColumns = Schema.decodeUnknownSync(SubscriptionColumns)

/** A live subscription as its row holds it. */
export const subscriptionFromRow = (row: Row): Subscription => {
  const c = decodeSubscriptionColumns(row)
  return {
    subscriptionId: c.subscription_id,
    projectId: c.project_id,
    userId: c.user_id,
    trigger: c.trigger,
    deliveryMode: c.delivery_mode,
    ...(c.connection_id !== null ? { connectionId: c.connection_id } : {}),
    webhookEndpointIds: c.webhook_endpoint_ids,
    filters: c.filters,
    ...(c.poll_interval_seconds !== null ? { pollIntervalSeconds: c.poll_interval_seconds } : {}),
    ...(c.secret_hash !== null ? { secretHash: c.secret_hash } : {}),
    status: "active",
    createdAt: c.created_at,
    updatedAt: c.updated_at,
    deleted: false
  }
}

const sweptChanges = (recorded: RecordedEvent, table: string): ReadonlyArray<RowChange> =>
  sweepCodec.decode(recorded).arrivalIds.map((arrivalId) => ({ op: "delete", table, key: { arrival_id: arrivalId } }))

const eventChanges = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  if (recorded.streamType === SWEEP_STREAM_TYPE) return sweptChanges(recorded, EVENTS_TABLE)
  const event = arrivalCodec.decode(recorded)
  if (event.type !== "TriggerEventReceived") return []
  return [{
    op: "upsert",
    table: EVENTS_TABLE,
    row: {
      arrival_id: event.arrivalId,
      event_id: event.eventId,
      project_id: event.projectId,
      subscription_id: event.subscriptionId,
      trigger: event.trigger,
      delivery_mode: event.deliveryMode,
      received_at: event.receivedAt,
      occurred_at: event.occurredAt,
      dedup_status: event.dedupStatus,
      requested: event.requestedWebhookEndpointIds,
      expires_at: isoTime(Date.parse(event.receivedAt) + HISTORY_TTL_MS)
    }
  }]
}

export const triggerEventsProjection: Projection = {
  name: "trigger_events",
  mode: "inline",
  streamTypes: [ARRIVAL_STREAM_TYPE, SWEEP_STREAM_TYPE],
  tables: [{
    name: EVENTS_TABLE,
    columns: {
      arrival_id: "text",
      event_id: "text",
      project_id: "text",
      subscription_id: "text",
      trigger: "text",
      delivery_mode: "text",
      received_at: "text",
      occurred_at: "text",
      dedup_status: "text",
      requested: "jsonb",
      expires_at: "text"
    },
    primaryKey: ["arrival_id"],
    indexes: [
      ["project_id", "-received_at", "-arrival_id"],
      ["project_id", "subscription_id", "-received_at", "-arrival_id"],
      ["project_id", "trigger", "-received_at", "-arrival_id"],
      ["expires_at"]
    ],
    // Memory mode (MemoryRetention.ts; decisions.md section 1: "executions, deliveries and
    // history older than this are dropped"): a row goes with the window after it was received,
    // with its progress and its deliveries, unless an open delivery or a selection still holds
    // its arrival (then all of it stays until that is done). Old streams go after it, with the
    // history sweeps' own one-event streams.
    retention: {
      since: (row) => Date.parse(String(row.received_at)),
      finished: () => true,
      stream: (row) => arrivalStreamId(String(row.arrival_id)),
      alsoStreams: [
        { streamType: ARRIVAL_STREAM_TYPE, minimumAgeMs: HISTORY_TTL_MS },
        { streamType: SWEEP_STREAM_TYPE, minimumAgeMs: 0 }
      ]
    }
  }],
  project: eventChanges
}

/** Every change of progress writes the same columns, so a commit's worth is one statement. */
const progressChanges = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  if (recorded.streamType === SWEEP_STREAM_TYPE) return sweptChanges(recorded, PROGRESS_TABLE)
  const event = arrivalCodec.decode(recorded)
  const arrivalId = recorded.streamId.slice(ARRIVAL_STREAM_TYPE.length + 1)
  const targets = event.type === "TriggerTargetsSelected" ? event.targets : []
  const owner = event.type === "TriggerEventReceived" ? event.owner ?? "" : ""
  return [{ op: "upsert", table: PROGRESS_TABLE, row: { arrival_id: arrivalId, phase: phaseOf(event), targets, owner } }]
}

export const triggerProgressProjection: Projection = {
  name: "trigger_event_progress",
  mode: "inline",
  streamTypes: [ARRIVAL_STREAM_TYPE, SWEEP_STREAM_TYPE],
  tables: [{
    name: PROGRESS_TABLE,
    columns: { arrival_id: "text", phase: "text", targets: "jsonb", owner: "text" },
    primaryKey: ["arrival_id"],
    indexes: [["phase", "arrival_id"]],
    // Memory mode: as the history row (above), by the arrival's id, which carries when it was
    // made. An arrival still selecting its targets holds its stream and its history row.
    retention: {
      since: (row) => idTimeMs(String(row.arrival_id)),
      finished: (row) => row.phase !== "selecting",
      stream: (row) => arrivalStreamId(String(row.arrival_id)),
      holds: {
        query: { where: [{ column: "phase", op: "=", value: "selecting" }], orderBy: [{ column: "arrival_id", direction: "asc" }], limit: Number.MAX_SAFE_INTEGER },
        stream: (row) => arrivalStreamId(String(row.arrival_id))
      }
    }
  }],
  project: progressChanges
}

export interface HistoryRow {
  readonly arrivalId: string
  readonly eventId: string
  readonly projectId: string
  readonly subscriptionId: string
  readonly trigger: string
  readonly deliveryMode: DeliveryMode
  readonly receivedAt: string
  readonly occurredAt: string
  readonly dedupStatus: DedupStatus
  readonly requestedWebhookEndpointIds: ReadonlyArray<string>
  readonly expiresAt: string
}

const EventColumns = Schema.Struct({
  arrival_id: Schema.String,
  event_id: Schema.String,
  project_id: Schema.String,
  subscription_id: Schema.String,
  trigger: Schema.String,
  delivery_mode: DeliveryMode,
  received_at: Schema.String,
  occurred_at: Schema.String,
  dedup_status: DedupStatus,
  requested: Schema.Array(Schema.String),
  expires_at: Schema.String
})
const decodeEventColumns = Schema.decodeUnknownSync(EventColumns)

export const historyFromRow = (row: Row): HistoryRow => {
  const c = decodeEventColumns(row)
  return {
    arrivalId: c.arrival_id,
    eventId: c.event_id,
    projectId: c.project_id,
    subscriptionId: c.subscription_id,
    trigger: c.trigger,
    deliveryMode: c.delivery_mode,
    receivedAt: c.received_at,
    occurredAt: c.occurred_at,
    dedupStatus: c.dedup_status,
    requestedWebhookEndpointIds: c.requested,
    expiresAt: c.expires_at
  }
}

export interface ProgressRow {
  readonly arrivalId: string
  readonly phase: Phase
  readonly targets: ReadonlyArray<DeliveryTarget>
  readonly owner: string
}

const ProgressColumns = Schema.Struct({
  arrival_id: Schema.String,
  phase: Schema.Literals(["not_enqueued", "selecting", "no_targets", "targets", "admission_failed"]),
  targets: Schema.Array(DeliveryTarget),
  owner: Schema.String
})
const decodeProgressColumns = Schema.decodeUnknownSync(ProgressColumns)

export const progressFromRow = (row: Row): ProgressRow => {
  const c = decodeProgressColumns(row)
  return { arrivalId: c.arrival_id, phase: c.phase, targets: c.targets, owner: c.owner }
}
