/**
 * Webhooks (the spec's Webhook endpoints and Delivery rules): endpoint commands, the sources of
 * delivered events, the dispatcher that queues deliveries from the log, the per-endpoint lanes
 * that send them, and their views. With a database the dispatch checkpoint is a table and the
 * lanes' endpoint reads are coalesced statements; without one both live in memory.
 */
import { Effect, Layer } from "effect"
import { REGISTRY_STREAM_TYPE } from "../../domain/webhooks/EndpointRegistry.ts"
import { DELIVERY_STREAM_TYPE } from "../../domain/webhooks/WebhookDelivery.ts"
import { ENDPOINT_STREAM_TYPE } from "../../domain/webhooks/WebhookEndpoint.ts"
import * as Access from "../access/index.ts"
import * as Actors from "../actors/index.ts"
import { onStorage } from "../eventlog/Database.ts"
import * as Eventlog from "../eventlog/index.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import { OutboundHttp } from "../outbound/OutboundHttp.ts"
import * as WebhookDispatcher from "./WebhookDispatcher.ts"
import * as WebhookEndpointReads from "./WebhookEndpointReads.ts"
import * as WebhookEndpoints from "./WebhookEndpoints.ts"
import * as WebhookLane from "./WebhookLane.ts"
import { webhookDeliveriesProjection, webhookEndpointsProjection } from "./WebhookProjections.ts"
import * as WebhookRecovery from "./WebhookRecovery.ts"
import * as WebhookSources from "./WebhookSources.ts"
import { layer as TriggerPayloadsLive, TriggerPayloads } from "../triggers/TriggerPayloads.ts"
import { triggerSource } from "../triggers/TriggerSource.ts"

export { WebhookLanes } from "./WebhookLane.ts"
export { WebhookEndpoints } from "./WebhookEndpoints.ts"
export { WebhookRecovery } from "./WebhookRecovery.ts"

/**
 * Sources of delivered events; later features (voice) add theirs here. Trigger events are
 * rebuilt from this process's payloads (infra/triggers/TriggerSource.ts).
 */
export const SourcesLive = Layer.effect(
  WebhookSources.WebhookSources,
  TriggerPayloads.useSync((payloads) => [WebhookSources.executionSource, triggerSource(payloads)])
).pipe(Layer.provide(TriggerPayloadsLive))

const CheckpointsLive = onStorage(WebhookDispatcher.checkpointsMemory, WebhookDispatcher.checkpointsPg)

/** Lanes read endpoints before every attempt: coalesced statements with a database, map lookups without. */
const EndpointReadsLive = onStorage(WebhookEndpointReads.layerMemory, WebhookEndpointReads.layerPg)

/** Lanes wake when an endpoint is edited in this process. */
const EndpointWakes = Layer.effectDiscard(
  Effect.gen(function*() {
    const endpoints = yield* WebhookEndpoints.WebhookEndpoints
    const lanes = yield* WebhookLane.WebhookLanes
    endpoints.onChange((endpointId) => {
      if (lanes.running().includes(endpointId)) Effect.runFork(lanes.notify(endpointId))
    })
  })
)

export const layer = Layer.mergeAll(WebhookDispatcher.layer, EndpointWakes, WebhookRecovery.layer).pipe(
  Layer.provideMerge(WebhookLane.layer),
  Layer.provide(EndpointReadsLive),
  Layer.provideMerge(WebhookEndpoints.layer),
  Layer.provide([SourcesLive, CheckpointsLive, OutboundHttp.layer, Actors.layer, Eventlog.layer, Access.layer])
)

export const migrations: ReadonlyArray<Migration> = WebhookDispatcher.webhookMigrations
export const projections: ReadonlyArray<Projection> = [webhookEndpointsProjection, webhookDeliveriesProjection]
export const streamTypes: ReadonlyArray<string> = [REGISTRY_STREAM_TYPE, ENDPOINT_STREAM_TYPE, DELIVERY_STREAM_TYPE]
