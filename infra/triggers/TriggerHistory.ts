/**
 * The trigger event history (spec, "Trigger event history"): pages of a project's rows, newest
 * receivedAt first, rows past their expiry hidden at once. Each row's `deliveryTargets` and
 * aggregate `deliveryStatus` are read with the page from the arrival's progress and the current
 * records of its deliveries (domain/triggers/DeliveryStatus.ts), so they follow the deliveries as
 * they move. Only the spec's fields: never payloads, provider ids, filters, URLs or secrets.
 *
 * The sweep removes expired rows physically, at most 1,000 per batch (one event each, so a replay
 * of the log removes them again); one process sweeps at a time (the `trigger-history-sweeper` lease).
 */
import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { aggregateStatus, type AggregateStatus, type TargetStatus } from "../../domain/triggers/DeliveryStatus.ts"
import { MAX_SWEEP_BATCH, SWEEP_STREAM_TYPE, sweepCodec } from "../../domain/triggers/TriggerEvent.ts"
import { isoTime } from "../../domain/Time.ts"
import { type Incarnation, Leases, Runner, supervise } from "../actors/index.ts"
import { EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Filter } from "../eventlog/Projection.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { newId } from "../Ids.ts"
import { DELIVERIES_TABLE } from "../webhooks/WebhookProjections.ts"
import { EVENTS_TABLE, historyFromRow, type HistoryRow, PROGRESS_TABLE, progressFromRow, type ProgressRow } from "./TriggerProjections.ts"
import { ViewReads } from "./ViewReads.ts"

export interface PublicTriggerEvent {
  readonly arrivalId: string
  readonly eventId: string
  readonly subscriptionId: string
  readonly trigger: string
  readonly deliveryMode: HistoryRow["deliveryMode"]
  readonly receivedAt: string
  readonly occurredAt: string
  readonly dedupStatus: HistoryRow["dedupStatus"]
  readonly deliveryStatus: AggregateStatus
  readonly requestedWebhookEndpointIds: ReadonlyArray<string>
  readonly deliveryTargets: ReadonlyArray<{ readonly endpointId: string; readonly deliveryId: string; readonly status: TargetStatus }>
  readonly expiresAt: string
}

export interface HistoryQuery {
  readonly projectId: string
  readonly subscriptionId?: string | undefined
  readonly trigger?: string | undefined
  readonly limit: number
  /** receivedAt and arrivalId of the last row of the previous page. */
  readonly after?: readonly [string, string] | undefined
}

export interface TriggerHistoryShape {
  readonly list: (query: HistoryQuery) => Effect.Effect<{ readonly rows: ReadonlyArray<PublicTriggerEvent>; readonly hasMore: boolean }, StoreUnavailable>
  /** Whether a cursor's anchor still exists (a swept anchor makes the cursor invalid). */
  readonly exists: (projectId: string, arrivalId: string) => Effect.Effect<boolean, StoreUnavailable>
  /** One sweep batch: expired rows removed (at most 1,000); answers how many. */
  readonly sweep: Effect.Effect<number, StoreUnavailable>
}

export class TriggerHistory extends Context.Service<TriggerHistory, TriggerHistoryShape>()("app/infra/triggers/TriggerHistory") {}

const SWEEP_EVERY_MS = 60_000
const SWEEPER_LEASE = "trigger-history-sweeper"
const isTargetStatus = (value: unknown): value is TargetStatus =>
  value === "pending" || value === "delivering" || value === "succeeded" || value === "failed"

const publicRow = (row: HistoryRow, progress: ProgressRow | undefined, statuses: ReadonlyMap<string, TargetStatus>): PublicTriggerEvent => {
  const targets = (progress?.targets ?? []).map((target) => ({ ...target, status: statuses.get(target.deliveryId) ?? "failed" as const }))
  const phase = progress?.phase ?? (row.dedupStatus === "accepted" ? "selecting" : "not_enqueued")
  return {
    arrivalId: row.arrivalId,
    eventId: row.eventId,
    subscriptionId: row.subscriptionId,
    trigger: row.trigger,
    deliveryMode: row.deliveryMode,
    receivedAt: row.receivedAt,
    occurredAt: row.occurredAt,
    dedupStatus: row.dedupStatus,
    deliveryStatus: aggregateStatus(phase, targets.map((target) => target.status)),
    requestedWebhookEndpointIds: row.requestedWebhookEndpointIds,
    deliveryTargets: targets,
    expiresAt: row.expiresAt
  }
}

export const make = Effect.gen(function*() {
  const views = yield* ViewStore
  const reads = yield* ViewReads
  const store = yield* EventStore

  const list = Effect.fnUntraced(function*(query: HistoryQuery) {
    const now = isoTime(yield* Clock.currentTimeMillis)
    const where: Array<Filter> = [
      { column: "project_id", op: "=", value: query.projectId },
      { column: "expires_at", op: ">", value: now }
    ]
    if (query.subscriptionId !== undefined) where.push({ column: "subscription_id", op: "=", value: query.subscriptionId })
    if (query.trigger !== undefined) where.push({ column: "trigger", op: "=", value: query.trigger })
    const found = yield* views.list(EVENTS_TABLE, {
      where,
      orderBy: [{ column: "received_at", direction: "desc" }, { column: "arrival_id", direction: "desc" }],
      after: query.after,
      limit: query.limit + 1
    })
    const rows = found.slice(0, query.limit).map(historyFromRow)
    const progress = new Map((yield* reads.byKeys(PROGRESS_TABLE, rows.map((row) => row.arrivalId))).map((raw) => {
      const decoded = progressFromRow(raw)
      return [decoded.arrivalId, decoded] as const
    }))
    const deliveryIds = [...progress.values()].flatMap((p) => p.targets.map((target) => target.deliveryId))
    const statuses = new Map<string, TargetStatus>()
    for (const raw of yield* reads.byKeys(DELIVERIES_TABLE, deliveryIds)) {
      const { delivery_id: id, status } = raw
      if (typeof id === "string" && isTargetStatus(status)) statuses.set(id, status)
    }
    return { rows: rows.map((row) => publicRow(row, progress.get(row.arrivalId), statuses)), hasMore: found.length > query.limit }
  })

  const sweep = Effect.gen(function*() {
    const now = isoTime(yield* Clock.currentTimeMillis)
    const expired = yield* views.list(EVENTS_TABLE, {
      where: [{ column: "expires_at", op: "<=", value: now }],
      orderBy: [{ column: "expires_at", direction: "asc" }, { column: "arrival_id", direction: "asc" }],
      limit: MAX_SWEEP_BATCH
    })
    if (expired.length === 0) return 0
    const arrivalIds = expired.map((row) => historyFromRow(row).arrivalId)
    yield* store.append([{
      streamId: `${SWEEP_STREAM_TYPE}-${newId("evt")}`,
      streamType: SWEEP_STREAM_TYPE,
      expectedVersion: 0,
      events: [sweepCodec.encode({ type: "TriggerEventsSwept", arrivalIds, at: now }, newId("evt"))]
    }]).pipe(Effect.catchTag("ConcurrencyConflict", (conflict) => Effect.die(conflict)))
    return arrivalIds.length
  })

  return TriggerHistory.of({
    list,
    exists: (projectId, arrivalId) =>
      Effect.map(views.get(EVENTS_TABLE, { arrival_id: arrivalId }), (row) => row !== undefined && historyFromRow(row).projectId === projectId),
    sweep
  })
})

export const layer = Layer.effect(TriggerHistory, make)

/** Sweeps at start-up and every minute, in the one incarnation holding the sweeper's lease. */
export const sweeperLayer = Layer.effectDiscard(Effect.gen(function*() {
  const history = yield* TriggerHistory
  const runner = yield* Runner
  const leases = yield* Leases
  const drain = history.sweep.pipe(Effect.repeat({ while: (removed) => removed >= MAX_SWEEP_BATCH }))
  const sweeper = (incarnation: Incarnation) =>
    Effect.gen(function*() {
      const held = yield* leases.tryAcquire(incarnation, SWEEPER_LEASE).pipe(Effect.orElseSucceed(() => false))
      if (held) yield* drain
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("trigger history sweep failed; retrying later", cause)),
      Effect.repeat(Schedule.spaced(SWEEP_EVERY_MS)),
      Effect.asVoid
    )
  yield* Effect.forkScoped(supervise(runner, sweeper))
}))
