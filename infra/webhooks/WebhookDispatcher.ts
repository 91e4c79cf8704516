/**
 * The webhook dispatcher: a follower of the log, apart from every source workflow (delivery
 * never delays an execution). From a durable checkpoint it maps recorded events through the
 * sources, queues one delivery per subscribed active endpoint of the event's project (known from
 * an in-memory index kept current by the same log, WebhookSubscriptions.ts), hands the queued
 * deliveries to their lanes, and saves the checkpoint at most once a second. Delivery ids are
 * derived from (event id, endpoint id), so re-reading events after a crash queues nothing twice.
 * Appends that arrive one by one are followed in batches (a few milliseconds apart).
 *
 * Also here: the sweep that starts lanes for endpoints with open deliveries (start-up recovery,
 * and take-over when a peer process holding a lane dies), and, with a database, a watcher of
 * the log that wakes local lanes for deliveries and endpoint edits made by other processes.
 */
import { Clock, Context, Effect, Layer, Schedule, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { encodeIdBody, ID_RANDOM_BYTES } from "../../domain/Ids.ts"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { ENDPOINT_STREAM_TYPE } from "../../domain/webhooks/WebhookEndpoint.ts"
import { type Incarnation, Leases, Runner, supervise } from "../actors/index.ts"
import { isDurable } from "../eventlog/Database.ts"
import { type AppendRequest, EventStore, type Position, type RecordedEvent, START, StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { WebhookLanes } from "./WebhookLane.ts"
import { DELIVERIES_TABLE, deliveryRowOf, type DeliveryRow } from "./WebhookProjections.ts"
import { sourceFor, WebhookSources } from "./WebhookSources.ts"
import { makeSubscriptionIndex, type SubscriptionIndex } from "./WebhookSubscriptions.ts"

export interface CheckpointsShape {
  readonly load: Effect.Effect<Position, StoreUnavailable>
  readonly save: (position: Position) => Effect.Effect<void, StoreUnavailable>
}

export class WebhookCheckpoints extends Context.Service<WebhookCheckpoints, CheckpointsShape>()("app/infra/WebhookCheckpoints") {}

export const webhookMigrations: ReadonlyArray<Migration> = [{
  id: 300,
  name: "webhook_dispatch_checkpoint",
  statements: [
    `CREATE TABLE webhook_dispatch_checkpoint (
      name text PRIMARY KEY,
      checkpoint_tx xid8 NOT NULL,
      checkpoint_seq bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  ]
}]

const CHECKPOINT = "dispatcher"

export const checkpointsMemory: Layer.Layer<WebhookCheckpoints> = Layer.sync(WebhookCheckpoints, () => {
  let position = START
  return { load: Effect.sync(() => position), save: (next) => Effect.sync(() => void (position = next)) }
})

export const checkpointsPg: Layer.Layer<WebhookCheckpoints, never, SqlClient.SqlClient> = Layer.effect(
  WebhookCheckpoints,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const unavailable = Effect.mapError((cause: unknown) => new StoreUnavailable({ cause }))
    return {
      load: sql<{ tx: string; seq: bigint }>`
        SELECT checkpoint_tx::text AS tx, checkpoint_seq AS seq FROM webhook_dispatch_checkpoint WHERE name = ${CHECKPOINT}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? START : { tx: BigInt(rows[0].tx), seq: BigInt(rows[0].seq) })),
        unavailable
      ),
      save: (position) =>
        sql`INSERT INTO webhook_dispatch_checkpoint (name, checkpoint_tx, checkpoint_seq)
            VALUES (${CHECKPOINT}, ${position.tx.toString()}::xid8, ${position.seq})
            ON CONFLICT (name) DO UPDATE SET checkpoint_tx = EXCLUDED.checkpoint_tx,
              checkpoint_seq = EXCLUDED.checkpoint_seq, updated_at = now()`.pipe(Effect.asVoid, unavailable)
    }
  })
)

/** Deterministic: the same event and endpoint always name the same delivery stream. */
export const deliveryIdFor = (eventId: string, endpointId: string, createdAtMs: number): string => {
  const digest = createHash("sha256").update(eventId).update("\u0000").update(endpointId).digest()
  return encodeIdBody(createdAtMs, digest.subarray(0, ID_RANDOM_BYTES), "whd")
}

const SWEEP_MS = 5_000

/**
 * Runs again `everyMs` after it ends or fails: followers never end, the sweep does. Failures in a
 * row (each within ten runs' time of the one before) are logged at the 1st, 2nd, 4th, 8th…, so a
 * database away for a minute writes a few lines, not one a second.
 */
export const forever = (name: string, effect: Effect.Effect<void, StoreUnavailable>, everyMs: number) => {
  let inRow = 0
  let lastFailure = Number.NEGATIVE_INFINITY
  return effect.pipe(
    Effect.catchCause((cause) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        inRow = now - lastFailure > 10 * everyMs ? 1 : inRow + 1
        lastFailure = now
        return (inRow & (inRow - 1)) === 0
          ? Effect.logWarning(`webhook ${name} failed; restarting (${inRow} in a row)`, cause)
          : Effect.void
      })),
    Effect.repeat(Schedule.spaced(everyMs)),
    Effect.asVoid
  )
}

/** How often the checkpoint is saved at most: a crash re-reads that much, and queues nothing twice. */
const CHECKPOINT_MS = 1_000
/**
 * After a batch smaller than a full read, the dispatcher waits this long before reading again, so
 * that appends arriving one by one are followed a batch at a time rather than one wake-up each.
 */
const COALESCE_MS = 5
const BATCH_SIZE = 1000

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const lanes = yield* WebhookLanes
  const runner = yield* Runner
  const leases = yield* Leases
  const sources = yield* WebhookSources
  const checkpoints = yield* WebhookCheckpoints
  const durable = yield* isDurable

  /** Appends the deliveries; false when some existed already (their lanes must read the view). */
  const queue = (requests: ReadonlyArray<AppendRequest>) =>
    store.append(requests).pipe(
      Effect.as(true),
      // Some were queued before (a re-read after a crash): queue the rest one by one.
      Effect.catchTag("ConcurrencyConflict", () =>
        Effect.forEach(
          requests,
          (request) => store.append([request]).pipe(Effect.catchTag("ConcurrencyConflict", () => Effect.void)),
          { concurrency: 16, discard: true }
        ).pipe(Effect.as(false)))
    )

  /** The position the dispatcher has dispatched through, saved a second apart by `saveCheckpoints`. */
  interface Progress {
    latest: Position | undefined
  }

  /**
   * The one writer of the checkpoint: every CHECKPOINT_MS it saves the latest position, if it moved.
   * A save per batch would cost a write per batch; saving only on a batch would leave the last
   * batch before a quiet spell unsaved, its events counted as lag for as long as the log is quiet.
   */
  const saveCheckpoints = (progress: Progress) => {
    let saved: Position | undefined
    return Effect.suspend(() => {
      const latest = progress.latest
      if (latest === undefined || latest === saved) return Effect.void
      return Effect.tap(checkpoints.save(latest), () => Effect.sync(() => void (saved = latest)))
    }).pipe(
      Effect.catchCause((cause) => Effect.logWarning("webhook dispatch checkpoint not saved; retrying", cause)),
      Effect.repeat(Schedule.spaced(CHECKPOINT_MS))
    )
  }

  const dispatchWith = (index: SubscriptionIndex, progress: Progress) =>
    Effect.fnUntraced(function*(events: ReadonlyArray<RecordedEvent>) {
      const requests: Array<AppendRequest> = []
      const handed = new Map<string, Array<DeliveryRow>>()
      const now = yield* Clock.currentTimeMillis
      const queuedAt = new Date(now).toISOString()
      for (const recorded of events) {
        index.observe(recorded)
        const event = sourceFor(sources, recorded)?.fromEvent(recorded)
        if (event === undefined) continue
        const endpoints = yield* index.subscribers(event.projectId, event.type)
        for (const endpoint of endpoints) {
          const deliveryId = deliveryIdFor(event.eventId, endpoint.endpointId, recorded.createdAt)
          const queued: Delivery.DeliveryQueued = {
            type: "DeliveryQueued",
            deliveryId,
            endpointId: endpoint.endpointId,
            projectId: event.projectId,
            eventId: event.eventId,
            eventType: event.type,
            source: {
              streamId: recorded.streamId,
              version: recorded.version,
              position: Delivery.positionKey(recorded.position.tx, recorded.position.seq)
            },
            queuedAt
          }
          requests.push({
            streamId: Delivery.deliveryStreamId(deliveryId),
            streamType: Delivery.DELIVERY_STREAM_TYPE,
            expectedVersion: 0,
            events: [Delivery.deliveryCodec.encode(queued, `evt_q_${deliveryId.slice(4)}`)]
          })
          lanes.remember(deliveryId, event)
          const rows = handed.get(endpoint.endpointId)
          if (rows === undefined) handed.set(endpoint.endpointId, [deliveryRowOf(queued)])
          else rows.push(deliveryRowOf(queued))
        }
      }
      let fresh = true
      for (let i = 0; i < requests.length; i += 200) fresh = (yield* queue(requests.slice(i, i + 200))) && fresh
      // The checkpoint may lag (a second at most): a re-read queues nothing twice.
      const last = events[events.length - 1]
      if (last !== undefined) progress.latest = last.position
      for (const [endpointId, rows] of handed) {
        yield* (fresh ? lanes.enqueue(endpointId, rows) : lanes.notify(endpointId))
      }
      if (events.length < BATCH_SIZE) yield* Effect.sleep(COALESCE_MS)
    })

  /** Endpoints with open deliveries, one query per endpoint (a skip scan over the view's index). */
  const sweep = Effect.gen(function*() {
    let after: string | undefined
    while (true) {
      const rows = yield* views.list(DELIVERIES_TABLE, {
        where: [{ column: "open", op: "=", value: true }],
        orderBy: [{ column: "endpoint_id", direction: "asc" }, { column: "source_position", direction: "asc" }, { column: "delivery_id", direction: "asc" }],
        after: after === undefined ? undefined : [after, "\uffff", "\uffff"],
        limit: 1
      })
      const endpointId = rows[0]?.endpoint_id
      if (typeof endpointId !== "string") return
      // Running lanes too: they read the view again, so nothing open is left behind (a delivery
      // queued by a peer dispatcher that this process's lanes never heard of).
      yield* lanes.notify(endpointId)
      after = endpointId
    }
  })

  let dispatching = false
  /** One dispatcher per database, in the incarnation holding its lease; the others wait. */
  const dispatcher = Effect.fnUntraced(function*(incarnation: Incarnation) {
    while (!(yield* leases.tryAcquire(incarnation, "webhook-dispatcher").pipe(Effect.orElseSucceed(() => false)))) {
      yield* Effect.sleep(2_000)
    }
    dispatching = true
    yield* Effect.addFinalizer(() => Effect.sync(() => void (dispatching = false)))
    // Taking over from a dead peer: start the lanes it left at once rather than at the next sweep.
    yield* sweep
    const from = yield* checkpoints.load
    const progress: Progress = { latest: undefined }
    yield* Effect.forkScoped(saveCheckpoints(progress))
    yield* store.follow(from, { batchSize: BATCH_SIZE }).pipe(Stream.runForEachArray(dispatchWith(makeSubscriptionIndex(views), progress)))
  })

  /**
   * Wakes local lanes for what other processes append. The dispatching process wakes its own
   * lanes directly, so its watcher stops; edits made through a peer then reach a sleeping lane at
   * its next wake-up (at the latest its retry time), which still precedes its next attempt.
   */
  const watcher = Effect.gen(function*() {
    const from = yield* store.head
    yield* store.follow(from, { batchSize: 1000 }).pipe(
      Stream.takeWhile(() => !dispatching),
      Stream.runForEach((event) => {
        if (event.streamType === Delivery.DELIVERY_STREAM_TYPE && event.type === "DeliveryQueued") {
          const queued = Delivery.deliveryCodec.decode(event)
          return queued.type === "DeliveryQueued" ? lanes.notify(queued.endpointId) : Effect.void
        }
        if (event.streamType === ENDPOINT_STREAM_TYPE && lanes.running().includes(event.streamId.slice(ENDPOINT_STREAM_TYPE.length + 1))) {
          return lanes.notify(event.streamId.slice(ENDPOINT_STREAM_TYPE.length + 1))
        }
        return Effect.void
      })
    )
  })

  yield* Effect.forkScoped(supervise(runner, (incarnation) => forever("dispatcher", Effect.scoped(dispatcher(incarnation)), 1_000)))
  yield* Effect.forkScoped(forever("sweep", sweep, SWEEP_MS))
  if (durable) {
    yield* Effect.forkScoped(forever("watcher", Effect.suspend(() => (dispatching ? Effect.void : watcher)), 1_000))
  }
})

export const layer = Layer.effectDiscard(make)
