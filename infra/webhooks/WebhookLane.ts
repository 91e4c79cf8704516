/**
 * Webhook lanes: an in-process keyed actor per endpoint (architecture.md, "Actors"). A lane runs
 * one delivery at a time, oldest first (feed order of the source events); a failing delivery
 * keeps the head and sleeps until its retry time; before every attempt it reads the endpoint's
 * current URL, secret and active state. Lanes keep nothing that the log does not: they read
 * open deliveries from the `webhook_deliveries` view, so a restart resumes where the log says,
 * and retry times hold.
 *
 * A lane runs only while its process holds the endpoint's lease (WebhookLeases); it stops when
 * idle, and `notify` starts it again. Deactivation or deletion abandons unfinished deliveries
 * (status `failed`, completedAt set): re-activating an endpoint does not resurrect them.
 */
import { Context, Effect, Fiber, FiberMap, Layer, Option, Scope } from "effect"
import { createSecretKey, type KeyObject } from "node:crypto"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { deliveryHeaders } from "../../domain/webhooks/WebhookSignature.ts"
import { type Incarnation, Leases, Runner } from "../actors/index.ts"
import { type AppendRequest, EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import { Wakeup } from "../eventlog/MemoryEventStore.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import { Secrets } from "../access/Secrets.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { WebhookEndpointReads } from "./WebhookEndpointReads.ts"
import { webhookSettings } from "./WebhookSettings.ts"
import { DELIVERIES_TABLE, deliveryFromRow, type DeliveryRow, type EndpointRow } from "./WebhookProjections.ts"
import { envelopeOf, sourceFor, type WebhookEvent, WebhookSources } from "./WebhookSources.ts"

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
}

type Outcome = "next" | "stop" | "reload"

/** Open deliveries have their DeliveryQueued plus one event per failed attempt. */
const requestOf = (row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>): AppendRequest => ({
  streamId: Delivery.deliveryStreamId(row.deliveryId),
  streamType: Delivery.DELIVERY_STREAM_TYPE,
  expectedVersion: 1 + row.attempts.length,
  // Event ids name the delivery and the stream version they take: unique, and no randomness.
  events: events.map((event, i) => Delivery.deliveryCodec.encode(event, `evt_${row.deliveryId.slice(4)}_${2 + row.attempts.length + i}`))
})

const leaseKey = (endpointId: string) => `webhook-lane/${endpointId}`

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const endpoints = yield* WebhookEndpointReads
  const secrets = yield* Secrets
  const http = yield* OutboundHttp
  const runner = yield* Runner
  const leases = yield* Leases
  const layerScope = yield* Effect.scope
  const sources = yield* WebhookSources
  const settings = yield* webhookSettings
  const payloads = new Map<string, WebhookEvent>()
  const delays = settings.retryDelaysMs

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

  const append = (row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>) => store.append([requestOf(row, events)])

  const abandonAll = Effect.fnUntraced(function*(endpointId: string, reason: Delivery.DeliveryAbandoned["reason"]) {
    while (true) {
      const open = yield* openDeliveries(endpointId, 100)
      if (open.length === 0) return
      yield* Effect.forEach(open, (row) => {
        payloads.delete(row.deliveryId)
        return append(row, Delivery.decide({ type: "Abandon", at: Date.now(), reason }, row))
      }, { concurrency: 8, discard: true })
    }
  })

  /** The event a delivery carries: remembered at enqueue, else rebuilt from its source event. */
  const eventOf = Effect.fnUntraced(function*(row: DeliveryRow) {
    const remembered = payloads.get(row.deliveryId)
    if (remembered !== undefined) return remembered
    const recorded = yield* store.readStream(row.sourceStreamId, row.sourceVersion)
    const source = recorded.find((event) => event.version === row.sourceVersion)
    if (source === undefined) return undefined
    return sourceFor(sources, source)?.fromEvent(source)
  })

  // Opening a sealed secret and preparing an HMAC key cost more than the signature itself; a
  // rotation seals a new value, so caching by sealed text never serves an old secret.
  const keys = new Map<string, KeyObject | undefined>()
  const signingKey = (sealed: string) => {
    if (!keys.has(sealed)) {
      if (keys.size >= 1_000) keys.clear()
      const secret = secrets.open(sealed)
      keys.set(sealed, secret === undefined ? undefined : createSecretKey(Buffer.from(secret, "utf8")))
    }
    return keys.get(sealed)
  }

  const attempt = Effect.fnUntraced(function*(incarnation: Incarnation, endpoint: EndpointRow, event: WebhookEvent) {
    const startedAt = Date.now()
    const secret = signingKey(endpoint.sealedSecret)
    if (secret === undefined) return { startedAt, endedAt: startedAt, outcome: { error: "secret_unavailable" } as Delivery.AttemptOutcome }
    const body = JSON.stringify(envelopeOf(event))
    const outcome: Delivery.AttemptOutcome = yield* http.request({
      method: "POST",
      url: endpoint.url,
      headers: deliveryHeaders(secret, event.eventId, Math.floor(startedAt / 1000), body),
      body,
      // An attempt never outlives the runner lease: past it, a peer may run this lane.
      timeoutMs: Math.max(1, Math.min(settings.timeoutMs, Math.floor(incarnation.safeUntil() - performance.now()))),
      maxBodyBytes: 0
    }).pipe(
      Effect.map((response): Delivery.AttemptOutcome => ({ statusCode: response.status })),
      Effect.catchTag("OutboundHttpError", (error) => Effect.succeed<Delivery.AttemptOutcome>({ error: error.reason }))
    )
    return { startedAt, endedAt: Date.now(), outcome }
  })

  /**
   * Success records are written behind the lane: the next delivery starts while the previous
   * one's record commits, so a lane is not bound by commit latency. One append is in flight per
   * lane at a time and carries every record that came meanwhile (one commit for many). They are
   * settled before the lane reads its open deliveries again (the view must show them finished),
   * before it abandons anything and before it goes idle. A crash in between re-sends the
   * delivered events, in order: at least once.
   */
  interface Pending {
    readonly records: Array<{ readonly row: DeliveryRow; readonly events: ReadonlyArray<Delivery.DeliveryEvent> }>
    writer: Fiber.Fiber<void, StoreUnavailable> | undefined
  }
  const writeBehind = Effect.fnUntraced(function*(pending: Pending): Effect.fn.Return<void, StoreUnavailable> {
    while (pending.records.length > 0) {
      const batch = pending.records.splice(0, 200)
      const requests = batch.map(({ row, events }) => requestOf(row, events))
      // A record some peer wrote first (a lane that ran twice for a moment) is skipped.
      yield* store.append(requests).pipe(
        Effect.catchTag("ConcurrencyConflict", () =>
          Effect.forEach(requests, (request) => store.append([request]).pipe(Effect.catchTag("ConcurrencyConflict", () => Effect.void)), {
            discard: true
          }))
      )
      for (const { row } of batch) payloads.delete(row.deliveryId)
    }
    // No yield between the emptiness check and this line: a record pushed later starts a writer.
    pending.writer = undefined
  })
  const behind = Effect.fnUntraced(function*(pending: Pending, row: DeliveryRow, events: ReadonlyArray<Delivery.DeliveryEvent>) {
    pending.records.push({ row, events })
    if (pending.writer === undefined) pending.writer = yield* Effect.forkChild(writeBehind(pending))
  })
  const settle = (pending: Pending) =>
    Effect.suspend(() => (pending.writer === undefined ? Effect.void : Fiber.join(pending.writer)))

  /** Works on the head delivery until it is finished, or the endpoint stops the lane. */
  const drive = Effect.fnUntraced(function*(endpointId: string, state: LaneState, first: DeliveryRow, pending: Pending) {
    const changed = state.changed
    let row = first
    while (true) {
      const since = changed.generation()
      const endpoint = yield* endpoints.current(endpointId)
      if (endpoint === undefined || !endpoint.active) {
        yield* settle(pending)
        yield* abandonAll(endpointId, endpoint === undefined ? "endpoint_deleted" : "endpoint_inactive")
        return "stop" as Outcome
      }
      const due = row.nextRetryAt !== undefined ? Date.parse(row.nextRetryAt) : Date.parse(row.queuedAt) + (delays[0] ?? 0)
      const wait = due - Date.now()
      if (wait > 0) {
        // A change (endpoint edited, deleted) cuts the sleep short to re-read the endpoint;
        // deliveries handed over meanwhile wait behind the head without waking it.
        yield* changed.wait(since).pipe(Effect.timeoutOption(wait))
        continue
      }
      const event = yield* eventOf(row)
      if (event === undefined) {
        yield* append(row, Delivery.decide({ type: "Abandon", at: Date.now(), reason: "source_unavailable" }, row))
        return "next" as Outcome
      }
      const { startedAt, endedAt, outcome } = yield* attempt(state.incarnation, endpoint, event)
      const events = Delivery.decide({ type: "RecordAttempt", outcome, startedAt, endedAt, delays }, row)
      if (events[0]?.type === "DeliveryAttemptSucceeded") {
        yield* behind(pending, row, events)
        return "next" as Outcome
      }
      const appended = yield* append(row, events).pipe(
        Effect.as(true),
        Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(false))
      )
      if (!appended) return "reload" as Outcome
      const next = events.reduce<Delivery.Progress>(Delivery.advance, row)
      if (Delivery.isFinished(next.status)) {
        payloads.delete(row.deliveryId)
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
  const work = Effect.fnUntraced(function*(endpointId: string, state: LaneState) {
    const pending: Pending = { records: [], writer: undefined }
    const wake = state.wake
    let known = false
    let last = ""
    /** False when the lane must read the view again. */
    const run = Effect.fnUntraced(function*(rows: ReadonlyArray<DeliveryRow>, handed: boolean) {
      for (const row of rows) {
        if (handed && row.sourcePosition <= last) continue
        const outcome = yield* drive(endpointId, state, row, pending)
        if (outcome !== "next") return false
        if (row.sourcePosition > last) last = row.sourcePosition
        if (pending.records.length >= MAX_BEHIND) yield* settle(pending)
      }
      return true
    })
    while (true) {
      const since = wake.generation()
      if (state.stale) {
        state.stale = false
        known = false
      }
      if (known) {
        const rows = state.handed
        state.handed = []
        if (rows.length > 0) {
          known = yield* run(rows, true)
          continue
        }
        // Idle: records settle before the lease could pass to a peer.
        yield* settle(pending)
        const woken = yield* wake.wait(since).pipe(Effect.timeoutOption(IDLE_MS))
        if (Option.isNone(woken)) return since
        continue
      }
      yield* settle(pending)
      const batch = yield* openDeliveries(endpointId, BATCH)
      known = (yield* run(batch, false)) && batch.length < BATCH
    }
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
          Effect.logWarning("webhook lane failed; retrying", cause).pipe(Effect.andThen(Effect.sleep(1000)), Effect.as(-1))),
        Effect.ensuring(Effect.ignore(leases.release(state.incarnation, leaseKey(endpointId))))
      )
      // Checked and removed in one synchronous step, so no notify falls in between.
      if (state.wake.generation() === lastSeen) {
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
      stale: true
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
    remember: (deliveryId, event) => {
      // Only a shortcut: a lane rebuilds any forgotten event from the log, so the cache is
      // bounded (deliveries run by a peer process are never taken out of it here).
      if (payloads.size >= 20_000) payloads.clear()
      payloads.set(deliveryId, event)
    },
    running: () => [...(current?.states.keys() ?? [])]
  })
})

export const layer = Layer.effect(WebhookLanes, make)
