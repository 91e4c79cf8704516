/**
 * Resending and recovering deliveries (decisions.md section 9, an extension after Svix's
 * "resend" and "recover"). A resend queues a new delivery of the same event (same eventId, so
 * receivers deduplicate it) at the tail of the endpoint's lane: its position is the log's head
 * when it is queued, so it goes after everything open then. Recover resends, oldest first and
 * once each, the events of the endpoint's failed deliveries queued since a time that the
 * endpoint has not had since and is not being sent.
 *
 * The event must still be buildable: a trigger event's payload lives only in the process that
 * took it (infra/triggers/TriggerPayloads.ts), and one whose payload is gone cannot be resent
 * (409 for a resend; skipped, not counted, by recover).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { NotFound, StateConflict } from "../../domain/Errors.ts"
import { isoTime } from "../../domain/Time.ts"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { type AppendRequest, EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { newId } from "../Ids.ts"
import { WebhookEndpoints } from "./WebhookEndpoints.ts"
import { WebhookLanes } from "./WebhookLane.ts"
import { DELIVERIES_TABLE, deliveryFromRow, type DeliveryRow, deliveryRowOf, publicDelivery } from "./WebhookProjections.ts"
import { rebuildFrom, type WebhookEvent, WebhookSources } from "./WebhookSources.ts"

export interface WebhookRecoveryShape {
  /** The new delivery; 404 for an unknown endpoint or delivery, 409 for an inactive endpoint or an event that cannot be built any more. */
  readonly resend: (projectId: string, endpointId: string, deliveryId: string) =>
    Effect.Effect<Delivery.DeliveryRecord, NotFound | StateConflict | StoreUnavailable>
  /** How many failed deliveries queued since `sinceMs` were queued again; 409 for an inactive endpoint. */
  readonly recover: (projectId: string, endpointId: string, sinceMs: number) => Effect.Effect<number, NotFound | StateConflict | StoreUnavailable>
}

export class WebhookRecovery extends Context.Service<WebhookRecovery, WebhookRecoveryShape>()("app/infra/webhooks/WebhookRecovery") {}

const PAGE = 200

const gone = (reason: "source_unavailable" | "payload_unavailable") =>
  new StateConflict({
    message: reason === "payload_unavailable"
      ? "The event can no longer be sent: a trigger event's payload is kept only by the process that received it, until it restarts."
      : "The event can no longer be sent: its record is gone (in memory mode, finished records older than SERVICE_MEMORY_RETENTION_MS are dropped)."
  })
const noDelivery = () => new NotFound({ message: "No such delivery." })
const inactive = () =>
  new StateConflict({ message: "The endpoint is inactive, so nothing would be sent: activate it (PATCH {\"active\": true}) first." })

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const endpoints = yield* WebhookEndpoints
  const lanes = yield* WebhookLanes
  const sources = yield* WebhookSources

  const eventOf = Effect.fnUntraced(function*(row: DeliveryRow) {
    const recorded = yield* store.readStream(row.sourceStreamId, row.sourceVersion)
    const source = recorded.find((event) => event.version === row.sourceVersion)
    const event = source === undefined ? undefined : rebuildFrom(sources, source)
    // `elsewhere`: another live process holds the payload; its lane will send it.
    return event ?? "source_unavailable"
  })

  /** Queues new deliveries of these events, in order, at the lane's tail. */
  const requeue = Effect.fnUntraced(function*(endpointId: string, items: ReadonlyArray<{ readonly row: DeliveryRow; readonly event: WebhookEvent | "elsewhere" }>) {
    if (items.length === 0) return []
    const head = yield* store.head
    const tail = Delivery.positionKey(head.tx, head.seq)
    const queuedAt = isoTime(yield* Clock.currentTimeMillis)
    // After the head and in the given order: positions are compared as text, and `<tail>:<n>`
    // sorts after `<tail>` and before any later event's position.
    const queued = items.map(({ row }, i): Delivery.DeliveryQueued => ({
      type: "DeliveryQueued",
      deliveryId: newId("whd"),
      endpointId,
      projectId: row.projectId,
      eventId: row.eventId,
      eventType: row.eventType,
      source: { streamId: row.sourceStreamId, version: row.sourceVersion, position: `${tail}:${String(i).padStart(6, "0")}` },
      queuedAt
    }))
    const requests = queued.map((q): AppendRequest => ({
      streamId: Delivery.deliveryStreamId(q.deliveryId),
      streamType: Delivery.DELIVERY_STREAM_TYPE,
      expectedVersion: 0,
      events: [Delivery.deliveryCodec.encode(q, `evt_q_${q.deliveryId.slice(4)}`)]
    }))
    yield* store.append(requests).pipe(Effect.catchTag("ConcurrencyConflict", (conflict) => Effect.die(conflict)))
    queued.forEach((q, i) => {
      const event = items[i]!.event
      if (event !== "elsewhere") lanes.remember(q.deliveryId, event)
    })
    yield* lanes.notify(endpointId)
    return queued
  })

  /** The endpoint, when it is active: an inactive one would fail every delivery queued at once. */
  const activeEndpoint = (projectId: string, endpointId: string) =>
    Effect.flatMap(endpoints.get(projectId, endpointId), (endpoint) => (endpoint.active ? Effect.succeed(endpoint) : Effect.fail(inactive())))

  const resend = Effect.fn("WebhookRecovery.resend")(function*(projectId: string, endpointId: string, deliveryId: string) {
    yield* activeEndpoint(projectId, endpointId)
    const found = yield* views.get(DELIVERIES_TABLE, { delivery_id: deliveryId })
    const row = found === undefined ? undefined : deliveryFromRow(found)
    if (row === undefined || row.endpointId !== endpointId) return yield* noDelivery()
    const event = yield* eventOf(row)
    if (event === "source_unavailable" || event === "payload_unavailable") return yield* gone(event)
    const [queued] = yield* requeue(endpointId, [{ row, event }])
    return publicDelivery(deliveryRowOf(queued!))
  })

  /** Visits every row of the endpoint that is open (`true`) or finished (`false`), in lane order, a page at a time. */
  const eachRow = Effect.fnUntraced(function*(endpointId: string, open: boolean, visit: (row: DeliveryRow) => void) {
    let after: ReadonlyArray<string> | undefined
    while (true) {
      const rows = yield* views.list(DELIVERIES_TABLE, {
        where: [{ column: "endpoint_id", op: "=", value: endpointId }, { column: "open", op: "=", value: open }],
        orderBy: [{ column: "source_position", direction: "asc" }, { column: "delivery_id", direction: "asc" }],
        after,
        limit: PAGE
      })
      let last: DeliveryRow | undefined
      for (const row of rows) visit(last = deliveryFromRow(row))
      if (rows.length < PAGE || last === undefined) return
      after = [last.sourcePosition, last.deliveryId]
    }
  })

  /**
   * The events of the endpoint's failed deliveries queued since `sinceMs`, once each, oldest
   * first, leaving out those a later delivery to the endpoint has brought (succeeded) or is still
   * bringing (open): after a resend or an earlier recover, recovering again sends nothing twice
   * (as Svix recovers the messages whose state for the endpoint is still failed). Memory holds
   * the failed events since `sinceMs`, not the endpoint's history.
   */
  const recover = Effect.fn("WebhookRecovery.recover")(function*(projectId: string, endpointId: string, sinceMs: number) {
    yield* activeEndpoint(projectId, endpointId)
    const since = isoTime(sinceMs)
    const failed = new Map<string, DeliveryRow>()
    const settled = new Set<string>()
    yield* eachRow(endpointId, false, (row) => {
      if (row.status === "failed" && row.queuedAt >= since && !failed.has(row.eventId)) failed.set(row.eventId, row)
      else if (row.status === "succeeded" && failed.has(row.eventId)) settled.add(row.eventId)
    })
    yield* eachRow(endpointId, true, (row) => void settled.add(row.eventId))
    const wanted = [...failed.values()].filter((row) => !settled.has(row.eventId))
    let count = 0
    for (let i = 0; i < wanted.length; i += PAGE) {
      const items: Array<{ row: DeliveryRow; event: WebhookEvent | "elsewhere" }> = []
      for (const row of wanted.slice(i, i + PAGE)) {
        const event = yield* eventOf(row)
        if (event !== "source_unavailable" && event !== "payload_unavailable") items.push({ row, event })
      }
      count += (yield* requeue(endpointId, items)).length
    }
    return count
  })

  return WebhookRecovery.of({ resend, recover })
})

export const layer = Layer.effect(WebhookRecovery, make)
