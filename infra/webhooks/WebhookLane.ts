/**
 * Webhook lanes: an in-process keyed actor per endpoint (architecture.md, "Actors"). A lane runs
 * one delivery at a time, oldest first (feed order of the source events); a failing delivery
 * keeps the head and sleeps until its retry time; before every attempt it reads the endpoint's
 * current URL, secret and active state. Lanes keep nothing that the log does not: they read
 * open deliveries from the `webhook_deliveries` view, so a restart resumes where the log says,
 * and retry times hold.
 *
 * A lane runs only while its process holds the endpoint's lease (infra/actors/Leases.ts), in the
 * scope of the runner incarnation that holds it; it stops when idle, and `notify` starts it
 * again. Deactivation or deletion abandons unfinished deliveries (status `failed`, completedAt
 * set, the reason as their last attempt's error): re-activating an endpoint does not resurrect
 * them, even when it is active again before the lane looks (a delivery queued before a switch-off
 * in the endpoint's stream is stopped). Attempts: DeliveryAttempt.ts; records written behind the lane: WriteBehind.ts.
 *
 * Over 300 lines on purpose: one actor whose drive loop, hand-over and stop share the lane's
 * state in one closure; its parts that stand alone already live in the modules named above.
 */
import { Cause, Clock, Context, Effect, FiberMap, Layer, Option, Scope } from "effect"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import * as Endpoint from "../../domain/webhooks/WebhookEndpoint.ts"
import { type Incarnation, Leases, Runner, Shutdown } from "../actors/index.ts"
import { backoff } from "../Backoff.ts"
import { recordDelivery } from "../observability/Metrics.ts"
import { type AppendRequest, EventStore } from "../eventlog/EventStore.ts"
import { Wakeup } from "../eventlog/MemoryEventStore.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import { Secrets } from "../access/Secrets.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { WebhookEndpointReads } from "./WebhookEndpointReads.ts"
import { webhookSettings } from "./WebhookSettings.ts"
import { envelopeFor, makeDeliveryAttempts } from "./DeliveryAttempt.ts"
import { DELIVERIES_TABLE, deliveryFromRow, type DeliveryRow, type EndpointRow } from "./WebhookProjections.ts"
import { rebuildFrom, sourceFor, type WebhookEvent, WebhookSources } from "./WebhookSources.ts"
import { makeWriteBehind, type Pending } from "./WriteBehind.ts"

export interface WebhookLanesShape {
  /** Something changed for this endpoint (new deliveries, endpoint edited): run or wake its lane, which reads the view again. */
  readonly notify: (endpointId: string) => Effect.Effect<void>
  /**
   * Deliveries of this endpoint that the dispatcher of this process has just queued (committed),
   * in feed order: a lane that knows it has nothing else open works them off without reading the view.
   */
  readonly enqueue: (endpointId: string, rows: ReadonlyArray<DeliveryRow>) => Effect.Effect<void>
  /** Keeps a queued delivery's event in memory so that its lane need not re-read the source. */
  readonly remember: (deliveryId: string, event: WebhookEvent) => void
  /** Endpoint ids whose lane runs in this process. */
  readonly running: () => ReadonlyArray<string>
}

export class WebhookLanes extends Context.Service<WebhookLanes, WebhookLanesShape>()("app/infra/WebhookLanes") {}

const BATCH = 50
/** How long an idle lane keeps its lease before it stops. */
const IDLE_MS = 2_000
/** Success records a lane lets run behind it before it waits for them. */
const MAX_BEHIND = 64

interface LaneState {
  /** The incarnation running the lane: its lease bounds every attempt. */
  readonly incarnation: Incarnation
  /** Bumped by hand-offs and by `notify`: the lane has something new to look at. */
  readonly wake: Wakeup
  /** Bumped by `notify` only: a delivery sleeping until its retry re-reads the endpoint. */
  readonly changed: Wakeup
  /** Handed over by the dispatcher since the lane last took them, oldest first. */
  handed: Array<DeliveryRow>
  /** Set by `notify`: the lane must read the view before trusting hand-offs again. */
  stale: boolean
  /** Failures of the lane in a row: each waits twice as long before it starts again (1 s to 1 min). */
  failures: number
  /** When the endpoint was switched off, as read from its stream for the endpoint's `updatedAt`. */
  switchedOff?: { readonly updatedAt: string; readonly at: ReadonlyArray<string> } | undefined
}

/**
 * `drain`: the process is stopping (actors/Shutdown.ts); no further attempt starts, except while
 * the lane finishes what only this process can send (`finishing`).
 */
type Outcome = "next" | "stop" | "reload" | "drain" | "handover"

/** What `work` answers when the process is stopping. */
const STOPPED = -2

/** Open deliveries have their DeliveryQueued plus one event per failed attempt. */
const requestOf = (row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>): AppendRequest => ({
  streamId: Delivery.deliveryStreamId(row.deliveryId),
  streamType: Delivery.DELIVERY_STREAM_TYPE,
  expectedVersion: 1 + row.attempts.length,
  // Event ids name the delivery and the stream version they take: unique, and no randomness.
  events: events.map((event, i) => Delivery.deliveryCodec.encode(event, `evt_${row.deliveryId.slice(4)}_${2 + row.attempts.length + i}`))
})

const leaseKey = (endpointId: string) => `webhook-lane/${endpointId}`

/**
 * Deliveries that end `failed` without an attempt: their endpoint deactivated or deleted (one
 * line for all of them), or a delivery whose event can no longer be built (a trigger payload lost
 * with a restart). An operator sees them here, not only in the delivery history.
 */
const logStopped = (fields: {
  readonly projectId: string | undefined
  readonly endpointId: string
  readonly reason: Delivery.DeliveryAbandoned["reason"]
  readonly deliveries: number
  readonly deliveryId?: string
  readonly eventId?: string
}) => Effect.logWarning("webhook deliveries stopped", fields)

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const endpoints = yield* WebhookEndpointReads
  const secrets = yield* Secrets
  const http = yield* OutboundHttp
  const runner = yield* Runner
  const leases = yield* Leases
  const shutdown = yield* Shutdown
  const layerScope = yield* Effect.scope
  const sources = yield* WebhookSources
  const settings = yield* webhookSettings
  const delays = settings.retryDelaysMs
  const attempts = makeDeliveryAttempts({ secrets, http, timeoutMs: settings.timeoutMs })
  const records = makeWriteBehind({ store, requestOf, written: (row) => attempts.forget(row.deliveryId) })

  /**
   * The lanes of one incarnation (actors/Runner.ts): their fibers live in its scope, so a lost
   * runner lease stops them all at once, and the next incarnation starts with none.
   */
  interface Lanes {
    readonly incarnation: Incarnation
    readonly fibers: FiberMap.FiberMap<string, void, never>
    readonly states: Map<string, LaneState>
  }
  let current: Lanes | undefined
  const lanesOf = Effect.gen(function*() {
    const incarnation = yield* runner.current
    if (current?.incarnation === incarnation) return current
    const fibers = yield* FiberMap.make<string, void, never>().pipe(
      Effect.provideService(Scope.Scope, yield* incarnation.actorScope(layerScope))
    )
    // Another call may have opened this incarnation's lanes meanwhile: keep the first.
    if (current?.incarnation !== incarnation) current = { incarnation, fibers, states: new Map() }
    return current
  })

  const openDeliveries = (endpointId: string, limit: number) =>
    views.list(DELIVERIES_TABLE, {
      where: [{ column: "endpoint_id", op: "=", value: endpointId }, { column: "open", op: "=", value: true }],
      orderBy: [{ column: "source_position", direction: "asc" }, { column: "delivery_id", direction: "asc" }],
      limit
    }).pipe(Effect.map((rows) => rows.map(deliveryFromRow)))

  /** A record the lane waits for; a failing store is retried (backing off), never the attempt. */
  const append = (row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>) =>
    store.append([requestOf(row, events)]).pipe(
      Effect.tapError((error) => error._tag === "StoreUnavailable" ? Effect.logWarning("webhook delivery record not written yet; retrying", error) : Effect.void),
      Effect.retry({ schedule: backoff("30 seconds"), while: (error) => error._tag === "StoreUnavailable" })
    )

  /** Ends a delivery failed without an attempt, for `reason`; /metrics counts it among the failed. */
  const abandon = (row: DeliveryRow, at: number, reason: Delivery.DeliveryAbandoned["reason"]) =>
    append(row, Delivery.decide({ type: "Abandon", at, reason }, row)).pipe(Effect.tap(() => Effect.sync(() => recordDelivery("failed"))))

  const abandonAll = Effect.fnUntraced(function*(endpointId: string, reason: Delivery.DeliveryAbandoned["reason"]) {
    let stopped = 0
    let projectId: string | undefined
    while (true) {
      const open = yield* openDeliveries(endpointId, 100)
      if (open.length === 0) break
      projectId ??= open[0]?.projectId
      const at = yield* Clock.currentTimeMillis
      yield* Effect.forEach(open, (row) => {
        attempts.forget(row.deliveryId)
        return abandon(row, at, reason)
      }, { concurrency: 8, discard: true })
      stopped += open.length
    }
    if (stopped > 0) yield* logStopped({ projectId, endpointId, reason, deliveries: stopped })
  })

  /** The envelope a delivery carries: remembered at enqueue, else rebuilt from its source event; or why there is none. */
  const envelopeOf = Effect.fnUntraced(function*(row: DeliveryRow) {
    const remembered = attempts.remembered(row.deliveryId)
    if (remembered !== undefined) return remembered
    const recorded = yield* store.readStream(row.sourceStreamId, row.sourceVersion)
    const source = recorded.find((event) => event.version === row.sourceVersion)
    const event = source === undefined ? "source_unavailable" as const : rebuildFrom(sources, source)
    return typeof event === "string" ? event : envelopeFor(event)
  })

  /**
   * When the endpoint was switched off, read from its stream once per change of the endpoint
   * (its `updatedAt`): only a delivery queued before its last change can have been stopped.
   */
  const switchedOff = Effect.fnUntraced(function*(state: LaneState, endpoint: EndpointRow) {
    if (state.switchedOff?.updatedAt === endpoint.updatedAt) return state.switchedOff.at
    const recorded = yield* store.readStream(Endpoint.endpointStreamId(endpoint.endpointId))
    const at = Endpoint.deactivations(recorded.map((event) => Endpoint.endpointCodec.decode(event)))
    state.switchedOff = { updatedAt: endpoint.updatedAt, at }
    return at
  })

  /** When a delivery's next attempt is due: its retry time, or its first attempt's delay after it was queued. */
  const dueAt = (row: DeliveryRow): number =>
    row.nextRetryAt !== undefined ? Date.parse(row.nextRetryAt) : Date.parse(row.queuedAt) + (delays[0] ?? 0)

  /**
   * Whether a delivery is due and only this process can send it: its event's payload is kept here
   * and nowhere else (a trigger event this process took; decisions.md section 5). A stopping
   * process finishes those before it exits, within the stop's deadline: after it they are gone.
   */
  const dueOnlyHere = Effect.fnUntraced(function*(row: DeliveryRow, now: number) {
    if (dueAt(row) > now) return false
    const recorded = yield* store.readStream(row.sourceStreamId, row.sourceVersion)
    const source = recorded.find((event) => event.version === row.sourceVersion)
    const rebuild = source === undefined ? undefined : sourceFor(sources, source)?.rebuild
    return source !== undefined && rebuild !== undefined && typeof rebuild(source) === "object"
  })

  /**
   * Works on the head delivery until it is finished, or the endpoint stops the lane. While the
   * process stops, only a lane `finishing` what needs this process goes on, and none waits for
   * a retry time.
   */
  const drive = Effect.fnUntraced(function*(endpointId: string, state: LaneState, first: DeliveryRow, pending: Pending, finishing: boolean) {
    const changed = state.changed
    let row = first
    while (true) {
      if (shutdown.stopping() && !finishing) return "drain" as Outcome
      const since = changed.generation()
      const endpoint = yield* endpoints.current(endpointId)
      if (endpoint === undefined || !endpoint.active) {
        yield* records.settle(pending)
        yield* abandonAll(endpointId, endpoint === undefined ? "endpoint_deleted" : "endpoint_inactive")
        return "stop" as Outcome
      }
      // Switched off and on again before the lane looked: what was unfinished then stays stopped.
      if (Date.parse(endpoint.updatedAt) >= Date.parse(row.queuedAt) && Endpoint.stoppedBySwitchOff(yield* switchedOff(state, endpoint), row.queuedAt)) {
        attempts.forget(row.deliveryId)
        yield* abandon(row, yield* Clock.currentTimeMillis, "endpoint_inactive")
        yield* logStopped({ projectId: row.projectId, endpointId, reason: "endpoint_inactive", deliveries: 1, deliveryId: row.deliveryId, eventId: row.eventId })
        return "next" as Outcome
      }
      const wait = dueAt(row) - (yield* Clock.currentTimeMillis)
      if (wait > 0 && shutdown.stopping()) return "drain" as Outcome
      if (wait > 0) {
        // A change (endpoint edited, deleted) cuts the sleep short to re-read the endpoint;
        // deliveries handed over meanwhile wait behind the head without waking it.
        yield* changed.wait(since).pipe(Effect.timeoutOption(wait))
        continue
      }
      const envelope = yield* envelopeOf(row)
      if (envelope === "elsewhere") {
        // Another live process holds this event's payload (a trigger event it took): the lane
        // stops and frees its lease, which that process keeps asking for (triggers/TriggerFanout.ts).
        yield* records.settle(pending)
        return "handover" as Outcome
      }
      if (typeof envelope === "string") {
        // Nothing to send (a trigger event's payload gone with a restart): failed, the reason as its last attempt.
        yield* abandon(row, yield* Clock.currentTimeMillis, envelope)
        yield* logStopped({ projectId: row.projectId, endpointId, reason: envelope, deliveries: 1, deliveryId: row.deliveryId, eventId: row.eventId })
        return "next" as Outcome
      }
      const { startedAt, endedAt, outcome } = yield* attempts.attempt(state.incarnation, endpoint, envelope, row.deliveryId)
      const events = Delivery.decide({ type: "RecordAttempt", outcome, startedAt, endedAt, delays }, row)
      if (events[0]?.type === "DeliveryAttemptSucceeded") {
        recordDelivery("succeeded")
        yield* records.behind(pending, row, events)
        return "next" as Outcome
      }
      const appended = yield* append(row, events).pipe(
        Effect.as(true),
        Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(false))
      )
      if (!appended) return "reload" as Outcome
      const next = events.reduce<Delivery.Progress>(Delivery.advance, row)
      yield* Effect.logWarning("webhook delivery attempt failed", {
        projectId: row.projectId,
        endpointId,
        deliveryId: row.deliveryId,
        eventId: envelope.eventId,
        attempt: next.attempts.length,
        error: "statusCode" in outcome ? `status ${outcome.statusCode}` : outcome.error,
        ...(next.nextRetryAt !== undefined ? { nextRetryAt: next.nextRetryAt } : { givenUp: true })
      })
      if (Delivery.isFinished(next.status)) {
        recordDelivery("failed")
        attempts.forget(row.deliveryId)
        return "next" as Outcome
      }
      const { nextRetryAt: _, ...rest } = row
      row = { ...rest, status: next.status, attempts: next.attempts, ...(next.nextRetryAt !== undefined ? { nextRetryAt: next.nextRetryAt } : {}) }
    }
  })

  /**
   * Drains the endpoint's open deliveries; returns the wake generation at which it found nothing
   * to do for IDLE_MS. The view is the truth; once a read came back short and was worked through,
   * the lane knows that every delivery opened since is one the dispatcher hands over (or a
   * `notify` makes it read again), so it takes hand-offs without a query per delivery. Positions
   * at or before the last finished delivery are skipped: a hand-off may repeat what a read saw.
   */
  const drain = Effect.fnUntraced(function*(endpointId: string, state: LaneState, pending: Pending) {
    const wake = state.wake
    let known = false
    let last = ""
    /**
     * False when the lane must read the view again; `handover` when another process must run it;
     * `drain` when the process stops.
     */
    const run = Effect.fnUntraced(function*(rows: ReadonlyArray<DeliveryRow>, handed: boolean, finishing = false) {
      for (const row of rows) {
        if (handed && row.sourcePosition <= last) continue
        const outcome = yield* drive(endpointId, state, row, pending, finishing)
        if (outcome === "handover" || outcome === "drain") return outcome
        if (outcome !== "next") return false
        if (row.sourcePosition > last) last = row.sourcePosition
        if (pending.records.length >= MAX_BEHIND) yield* records.settle(pending)
      }
      return true
    })
    while (true) {
      if (shutdown.stopping()) {
        // Stopping: the records of attempts made are written; the rest waits for the next
        // process, unless it needs this one: those are sent first, in the lane's order.
        yield* records.settle(pending)
        const open = yield* openDeliveries(endpointId, BATCH)
        const now = yield* Clock.currentTimeMillis
        const needed = yield* Effect.findFirst(open, (row) => dueOnlyHere(row, now))
        if (Option.isNone(needed)) return STOPPED
        const ran = yield* run(open, false, true)
        if (ran === "handover" || ran === "drain") {
          yield* records.settle(pending)
          return STOPPED
        }
        continue
      }
      const since = wake.generation()
      if (state.stale) {
        state.stale = false
        known = false
      }
      if (known) {
        const rows = state.handed
        state.handed = []
        if (rows.length > 0) {
          const ran = yield* run(rows, true)
          if (ran === "handover") return STOPPED
          known = ran === true
          continue
        }
        // Idle: records settle before the lease could pass to a peer.
        yield* records.settle(pending)
        const woken = yield* wake.wait(since).pipe(Effect.timeoutOption(IDLE_MS))
        if (Option.isNone(woken)) return since
        continue
      }
      yield* records.settle(pending)
      const batch = yield* openDeliveries(endpointId, BATCH)
      const ran = yield* run(batch, false)
      if (ran === "handover") return STOPPED
      known = ran === true && batch.length < BATCH
    }
  })

  /**
   * `drain` with its records written behind it. A lane that fails (a store read refused while
   * the database is away) first waits for the records of the attempts it made: were they dropped,
   * the lane would find those deliveries open when it starts over and send them again, although
   * it kept its lease (outside audit). Interrupted (the process stopping, the lease lost), it
   * does not wait: a peer then sends them again, at least once.
   */
  const work = (endpointId: string, state: LaneState) =>
    Effect.suspend(() => {
      const pending = records.make()
      return drain(endpointId, state, pending).pipe(
        Effect.tapCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : records.settle(pending))
      )
    })

  const held = (state: LaneState, endpointId: string) =>
    leases.tryAcquire(state.incarnation, leaseKey(endpointId)).pipe(
      Effect.catch((error) => Effect.logWarning("webhook lane lease unavailable", error).pipe(Effect.as(false)))
    )

  const lane = Effect.fnUntraced(function*(lanes: Lanes, endpointId: string, state: LaneState): Effect.fn.Return<void> {
    while (true) {
      if (!(yield* held(state, endpointId))) {
        // A peer process runs this lane; the sweep retries if it goes away.
        lanes.states.delete(endpointId)
        return
      }
      const lastSeen = yield* work(endpointId, state).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("webhook lane failed; retrying", cause).pipe(
            Effect.andThen(Effect.sleep(Math.min(60_000, 1_000 * 2 ** state.failures++))),
            Effect.as(-1)
          )),
        Effect.ensuring(Effect.ignore(leases.release(state.incarnation, leaseKey(endpointId))))
      )
      if (lastSeen !== -1) state.failures = 0
      // Checked and removed in one synchronous step, so no notify falls in between.
      if (lastSeen === STOPPED || shutdown.stopping() || state.wake.generation() === lastSeen) {
        lanes.states.delete(endpointId)
        return
      }
    }
  })

  const start = (lanes: Lanes, endpointId: string, handed: Array<DeliveryRow>) => {
    const state: LaneState = {
      incarnation: lanes.incarnation,
      wake: new Wakeup("1 hour"),
      changed: new Wakeup("1 hour"),
      handed,
      stale: true,
      failures: 0
    }
    lanes.states.set(endpointId, state)
    return Effect.asVoid(FiberMap.run(lanes.fibers, endpointId, lane(lanes, endpointId, state)))
  }

  const notify = (endpointId: string) =>
    Effect.flatMap(lanesOf, (lanes) => {
      const existing = lanes.states.get(endpointId)
      if (existing === undefined) return start(lanes, endpointId, [])
      existing.stale = true
      existing.changed.notify()
      existing.wake.notify()
      return Effect.void
    })

  // A stop wakes every lane (one sleeping until a retry time too): each finishes the attempt it
  // is making, writes its records and ends; the stop waits for the last one.
  yield* shutdown.onStop("webhook lanes", Effect.gen(function*() {
    for (const state of current?.states.values() ?? []) {
      state.changed.notify()
      state.wake.notify()
    }
    while ((current?.states.size ?? 0) > 0) yield* Effect.sleep(10)
  }))

  return WebhookLanes.of({
    notify,
    enqueue: (endpointId, rows) =>
      Effect.flatMap(lanesOf, (lanes) => {
        const existing = lanes.states.get(endpointId)
        if (existing === undefined) return start(lanes, endpointId, [...rows])
        existing.handed.push(...rows)
        existing.wake.notify()
        return Effect.void
      }),
    remember: attempts.remember,
    running: () => [...(current?.states.keys() ?? [])]
  })
})

export const layer = Layer.effect(WebhookLanes, make)
