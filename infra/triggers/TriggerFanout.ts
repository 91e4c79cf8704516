/**
 * Fan-out of accepted trigger events (decisions.md section 5), in the process that holds their
 * payloads. Of the endpoints an arrival's subscription named, it keeps those that exist in the
 * project, are active and are subscribed to the trigger, and records in one commit the accepted
 * arrival, its targets and one delivery per target (`DeliveryQueued`, as the webhook dispatcher
 * would): an arrival is never left accepted without its deliveries by a crash, and an ingest
 * costs one commit. Arrivals admitted together share the endpoint read and the commit. The
 * endpoints' lanes then deliver them like any other; an arrival with no such endpoint is
 * `no_targets`, one whose payload is already gone `admission_failed`.
 *
 * Recovery (at start-up and every few seconds): an arrival recorded `selecting` on its own (by an
 * earlier version, or by hand) whose owner (the runner incarnation that accepted it) is gone is
 * fanned out here when this process has the payload (a lost lease, not a restart), and otherwise
 * fails admission. The arrival stream's version keeps two deciders apart.
 *
 * Deliveries are handed to the local lanes (no view read per delivery). Their positions order
 * them after everything committed before (the log's head when they are planned, then a counter
 * of this process); a lane trusts hand-offs only in feed order and these interleave with the
 * dispatcher's, so each lane is also reminded a second later to read its open deliveries.
 */
import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { subscribes } from "../../domain/webhooks/WebhookEndpoint.ts"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { isoTime } from "../../domain/Time.ts"
import * as Arrival from "../../domain/triggers/TriggerEvent.ts"
import {
  type ArrivalEvent,
  arrivalCodec,
  arrivalStreamId,
  ARRIVAL_STREAM_TYPE,
  type DeliveryTarget,
  type TriggerEventReceived
} from "../../domain/triggers/TriggerEvent.ts"
import { Runner } from "../actors/index.ts"
import { inOrder, makeBatcher } from "../Batcher.ts"
import { type AppendRequest, EventStore, StoreUnavailable } from "../eventlog/EventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { newId } from "../Ids.ts"
import { type DeliveryRow, deliveryRowOf, endpointFromRow, type EndpointRow, ENDPOINTS_TABLE } from "../webhooks/WebhookProjections.ts"
import type { WebhookEvent } from "../webhooks/WebhookSources.ts"
import { WebhookLanes } from "../webhooks/WebhookLane.ts"
import { TriggerPayloads } from "./TriggerPayloads.ts"
import { PROGRESS_TABLE, progressFromRow } from "./TriggerProjections.ts"
import { ViewReads } from "./ViewReads.ts"

export interface TriggerFanoutShape {
  /**
   * Records an accepted arrival (its payload already kept here) with its targets and their
   * deliveries; false when its stream was recorded first by another admitter.
   */
  readonly admit: (received: TriggerEventReceived) => Effect.Effect<boolean, StoreUnavailable>
  /** One recovery pass (the layer runs it every few seconds). */
  readonly recover: Effect.Effect<number, StoreUnavailable>
}

export class TriggerFanout extends Context.Service<TriggerFanout, TriggerFanoutShape>()("app/infra/triggers/TriggerFanout") {}

const MAX_BATCH = 200
const KICK_MS = 250
const RECHECK_MS = 1_000
const KICKS = 40
/** How often the live incarnations are read for the lanes' hand-over (TriggerPayloads.locate). */
const ALIVE_MS = 2_000
const RECOVERY_MS = 5_000
const RECOVERY_PAGE = 500

/** An arrival to decide: new (its record and its targets together), or recorded and still selecting. */
interface Pending {
  readonly received: TriggerEventReceived
  readonly recorded: boolean
}

interface Plan {
  readonly requests: ReadonlyArray<AppendRequest>
  readonly deliveries: ReadonlyArray<{ readonly endpointId: string; readonly event: WebhookEvent; readonly row: DeliveryRow }>
}

/** The events of an accepted decision; a refusal cannot happen here (the state is the one just made). */
const decisionOf = (decision: ReadonlyArray<ArrivalEvent> | Arrival.ArrivalRejection): ReadonlyArray<ArrivalEvent> => {
  if (!Array.isArray(decision)) throw new Error(`arrival decision refused: ${JSON.stringify(decision)}`)
  return decision
}

const byPosition = (a: DeliveryRow, b: DeliveryRow) => (a.sourcePosition < b.sourcePosition ? -1 : a.sourcePosition > b.sourcePosition ? 1 : 0)

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const reads = yield* ViewReads
  const lanes = yield* WebhookLanes
  const payloads = yield* TriggerPayloads
  const runner = yield* Runner
  const layerScope = yield* Effect.scope
  /** Orders this process's deliveries planned under one head. */
  let counter = 0

  /** The append that decides an arrival: its targets and their deliveries, or its admission failure. */
  const plan = (pending: Pending, endpointOf: (id: string) => EndpointRow | undefined, at: string, tail: string): Plan => {
    const { received } = pending
    const event = payloads.get(received.eventId)
    // The arrival's own decider makes the events: recorded (when new), then selected or failed.
    const { type: _, ...arrival } = received
    const recorded: ReadonlyArray<ArrivalEvent> = pending.recorded ? [] : decisionOf(Arrival.decide({ type: "RecordArrival", arrival }, undefined))
    const selecting = Arrival.evolve(undefined, received)
    const decided: Array<ArrivalEvent> = [...recorded]
    const targets: Array<DeliveryTarget> = []
    const requests: Array<AppendRequest> = []
    const deliveries: Array<Plan["deliveries"][number]> = []
    if (event === undefined) decided.push(...decisionOf(Arrival.decide({ type: "FailAdmission", at }, selecting)))
    else {
      for (const endpointId of received.requestedWebhookEndpointIds) {
        const endpoint = endpointOf(endpointId)
        if (endpoint === undefined || endpoint.projectId !== received.projectId || !endpoint.active || !subscribes(endpoint.events, event.type)) continue
        const deliveryId = newId("whd")
        targets.push({ endpointId, deliveryId })
        const queued: Delivery.DeliveryQueued = {
          type: "DeliveryQueued",
          deliveryId,
          endpointId,
          projectId: received.projectId,
          eventId: received.eventId,
          eventType: event.type,
          source: { streamId: arrivalStreamId(received.arrivalId), version: 1, position: `${tail}:${String(counter++).padStart(12, "0")}` },
          queuedAt: at
        }
        requests.push({
          streamId: Delivery.deliveryStreamId(deliveryId),
          streamType: Delivery.DELIVERY_STREAM_TYPE,
          expectedVersion: 0,
          events: [Delivery.deliveryCodec.encode(queued, `evt_q_${deliveryId.slice(4)}`)]
        })
        deliveries.push({ endpointId, event, row: deliveryRowOf(queued) })
      }
      decided.push(...decisionOf(Arrival.decide({ type: "SelectTargets", targets, at }, selecting)))
    }
    requests.unshift({
      streamId: arrivalStreamId(received.arrivalId),
      streamType: ARRIVAL_STREAM_TYPE,
      expectedVersion: pending.recorded ? 1 : 0,
      events: decided.map((e) => arrivalCodec.encode(e, newId("evt")))
    })
    return { requests, deliveries }
  }

  /** Commits the plans together; after a lost race (another admitter, a peer's recovery) each goes alone. */
  const commit = Effect.fnUntraced(function*(plans: ReadonlyArray<Plan>) {
    const all = plans.flatMap((p) => p.requests)
    const together = yield* store.append(all).pipe(Effect.as(true), Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(false)))
    if (together) return plans.map(() => true)
    return yield* Effect.forEach(plans, (p) =>
      store.append(p.requests).pipe(Effect.as(true), Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(false))))
  })

  /**
   * Decides a batch of arrivals: one endpoint read, one head read, one commit; answers which were
   * recorded. Two admitters of one arrival (a takeover racing the original) in one batch: the
   * first goes on, the other has lost.
   */
  const decide = Effect.fnUntraced(function*(all: ReadonlyArray<Pending>): Effect.fn.Return<ReadonlyArray<boolean>, StoreUnavailable> {
    const first = new Map<string, number>()
    all.forEach((pending, i) => {
      if (!first.has(pending.received.arrivalId)) first.set(pending.received.arrivalId, i)
    })
    const batch = all.filter((pending, i) => first.get(pending.received.arrivalId) === i)
    const decided = yield* decideDistinct(batch)
    const answers = new Map(batch.map((pending, i) => [pending, decided[i] ?? false] as const))
    return all.map((pending) => answers.get(pending) ?? false)
  })

  const decideDistinct = Effect.fnUntraced(function*(batch: ReadonlyArray<Pending>): Effect.fn.Return<ReadonlyArray<boolean>, StoreUnavailable> {
    const named = [...new Set(batch.flatMap((pending) => pending.received.requestedWebhookEndpointIds))]
    // Two statements at once: the endpoints named, and the log's head (the deliveries' order).
    const [endpointRows, head] = yield* Effect.all([reads.byKeys(ENDPOINTS_TABLE, named), store.head], { concurrency: 2 })
    const endpoints = new Map(endpointRows.map((row) => {
      const endpoint = endpointFromRow(row)
      return [endpoint.endpointId, endpoint] as const
    }))
    const at = isoTime(yield* Clock.currentTimeMillis)
    const plans = batch.map((pending) => plan(pending, (id) => endpoints.get(id), at, Delivery.positionKey(head.tx, head.seq)))
    const committed = yield* commit(plans)
    const handed = new Map<string, Array<DeliveryRow>>()
    plans.forEach((p, i) => {
      if (!committed[i]) return
      for (const delivery of p.deliveries) {
        lanes.remember(delivery.row.deliveryId, delivery.event)
        const rows = handed.get(delivery.endpointId)
        if (rows === undefined) handed.set(delivery.endpointId, [delivery.row])
        else rows.push(delivery.row)
      }
    })
    for (const [endpointId, rows] of handed) {
      yield* lanes.enqueue(endpointId, rows.toSorted(byPosition))
      yield* recheckLater(endpointId)
    }
    if (handed.size > 0) yield* Effect.forkIn(askForLanes([...handed.keys()]), layerScope)
    return committed
  })

  const admitBatch = yield* makeBatcher<Pending, boolean, StoreUnavailable>({ maxBatch: MAX_BATCH, serve: inOrder(decide) })

  /**
   * Hand-offs are the fast path, but a lane trusts them only in feed order, and these interleave
   * with the dispatcher's: a second later the lane is told to read its open deliveries again (at
   * most one such reminder pending per endpoint), so none waits for the dispatcher's 5 s sweep.
   */
  const rechecks = new Set<string>()
  const recheckLater = (endpointId: string) =>
    Effect.suspend(() => {
      if (rechecks.has(endpointId)) return Effect.void
      rechecks.add(endpointId)
      const reminder = Effect.sleep(RECHECK_MS).pipe(
        Effect.andThen(Effect.sync(() => rechecks.delete(endpointId))),
        Effect.andThen(lanes.notify(endpointId))
      )
      return Effect.asVoid(Effect.forkIn(reminder, layerScope))
    })

  /**
   * The payloads are here, so the lanes should run here: an endpoint whose lane another process
   * holds is asked for again every KICK_MS for a while (that lane hands itself over when it meets
   * one of these deliveries; the dispatcher's sweep would ask too, every 5 s).
   */
  const askForLanes = Effect.fnUntraced(function*(endpointIds: ReadonlyArray<string>) {
    let waiting = endpointIds
    for (let i = 0; i < KICKS && waiting.length > 0; i++) {
      yield* Effect.sleep(KICK_MS)
      const running = new Set(lanes.running())
      const elsewhere = waiting.filter((endpointId) => !running.has(endpointId))
      yield* Effect.forEach(elsewhere, (endpointId) => lanes.notify(endpointId), { discard: true })
      waiting = elsewhere
    }
  })

  /** Arrivals still selecting whose owner is gone: fanned out here if the payload is here, else failed. */
  const recover: Effect.Effect<number, StoreUnavailable> = Effect.gen(function*() {
    const alive = yield* runner.alive
    let after: string | undefined
    let decided = 0
    while (true) {
      const rows = yield* views.list(PROGRESS_TABLE, {
        where: [{ column: "phase", op: "=", value: "selecting" }],
        orderBy: [{ column: "arrival_id", direction: "asc" }],
        after: after === undefined ? undefined : [after],
        limit: RECOVERY_PAGE
      })
      const progress = rows.map(progressFromRow)
      const orphans = progress.filter((row) => !alive.has(row.owner))
      for (const orphan of orphans) {
        const recorded = yield* store.readStream(arrivalStreamId(orphan.arrivalId))
        const first = recorded[0]
        if (first === undefined || recorded.length !== 1) continue
        const received = arrivalCodec.decode(first)
        if (received.type !== "TriggerEventReceived") continue
        yield* decide([{ received, recorded: true }])
        decided++
      }
      if (rows.length < RECOVERY_PAGE) return decided
      after = progress[progress.length - 1]?.arrivalId
    }
  })

  yield* Effect.flatMap(Clock.currentTimeMillis, (readAtMs) =>
    Effect.tap(runner.alive, (alive) => Effect.sync(() => payloads.setAlive(alive, readAtMs)))).pipe(
    Effect.ignore,
    Effect.repeat(Schedule.spaced(ALIVE_MS)),
    Effect.forkScoped
  )

  yield* recover.pipe(
    Effect.catchCause((cause) => Effect.logWarning("trigger admission recovery failed; retrying", cause)),
    Effect.repeat(Schedule.spaced(RECOVERY_MS)),
    Effect.forkScoped
  )

  return TriggerFanout.of({ admit: (received) => admitBatch({ received, recorded: false }), recover })
})

export const layer = Layer.effect(TriggerFanout, make)
