/**
 * The webhook placement under test: the dispatcher's hand-offs to an endpoint's lane
 * (`WebhookLanes.enqueue` and `notify`) sent as messages to a `WebhookLane` cluster entity whose
 * id is the endpoint id; the entity's handler makes the same call on the real lanes
 * (infra/webhooks/WebhookLane.ts). The lane's own loop, its HTTP attempts and its records are
 * the service's, unchanged; only the dispatcher→lane hop moves onto the cluster.
 *
 * `routedLanes` is the `WebhookLanes` the dispatcher is given: it forwards to the real lanes or to
 * one of the entity clients, as `route.current` says, so both placements run on one service
 * instance (one dispatcher, one database) and can alternate round by round.
 */
import { Effect, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { Attempt, DeliveryStatus } from "../../domain/webhooks/WebhookDelivery.ts"
import { WebhookLanes, type WebhookLanesShape } from "../../infra/webhooks/WebhookLane.ts"
import type { DeliveryRow } from "../../infra/webhooks/WebhookProjections.ts"

/** A queued delivery as the dispatcher hands it over (WebhookProjections.DeliveryRow). */
const DeliveryRowSchema = Schema.Struct({
  deliveryId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  endpointId: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Array(Attempt),
  nextRetryAt: Schema.optionalKey(Schema.String),
  completedAt: Schema.optionalKey(Schema.String),
  projectId: Schema.String,
  sourceStreamId: Schema.String,
  sourceVersion: Schema.Number,
  sourcePosition: Schema.String,
  queuedAt: Schema.String
})

export const Enqueue = Rpc.make("Enqueue", { payload: { rows: Schema.Array(DeliveryRowSchema) } })
export const Notify = Rpc.make("Notify", {})

export const Lane = Entity.make("WebhookLane", [Enqueue, Notify])

/** A fresh layer value per Sharding instance (see ExecutionEntity.ts). */
export const makeLaneEntityLayer = () =>
  Lane.toLayer(
    Effect.gen(function*() {
      const lanes = yield* WebhookLanes
      const address = yield* Entity.CurrentAddress
      const endpointId = address.entityId
      return Lane.of({
        Enqueue: ({ payload }) => lanes.enqueue(endpointId, payload.rows as ReadonlyArray<DeliveryRow>),
        Notify: () => lanes.notify(endpointId)
      })
    }),
    { disableFatalDefects: true }
  )

export type LaneClient = (endpointId: string) => {
  readonly Enqueue: (payload: { readonly rows: ReadonlyArray<DeliveryRow> }) => Effect.Effect<void, unknown>
  readonly Notify: () => Effect.Effect<void, unknown>
}

export interface Route {
  /** `undefined`: the direct call; otherwise the entity client of one Sharding instance. */
  current: LaneClient | undefined
  /** Hand-offs (enqueue + notify) made since the last reset. */
  handoffs: number
  /** Hand-offs whose entity message failed (each is retried as a direct notify). */
  failures: number
}

/**
 * The dispatcher's view of the lanes. A failed entity message would strand the rows in the
 * dispatcher, so it falls back to a direct `notify` (the lane then reads the view) and is counted.
 */
export const routedLanes = (real: WebhookLanesShape, route: Route): WebhookLanesShape => {
  const viaEntity = (endpointId: string, send: Effect.Effect<void, unknown>) =>
    send.pipe(
      Effect.catchCause(() =>
        Effect.suspend(() => {
          route.failures++
          return real.notify(endpointId)
        })
      )
    )
  return WebhookLanes.of({
    remember: real.remember,
    running: real.running,
    enqueue: (endpointId, rows) =>
      Effect.suspend(() => {
        route.handoffs++
        const client = route.current
        return client === undefined ? real.enqueue(endpointId, rows) : viaEntity(endpointId, client(endpointId).Enqueue({ rows }))
      }),
    notify: (endpointId) =>
      Effect.suspend(() => {
        route.handoffs++
        const client = route.current
        return client === undefined ? real.notify(endpointId) : viaEntity(endpointId, client(endpointId).Notify())
      })
  })
}
