/**
 * Webhooks as one layer: endpoint commands, the sources, the delivery lanes and the dispatcher.
 * With a database, lane leases are advisory locks and the dispatch checkpoint is a table; without
 * one, both live in memory.
 */
import { Effect, Layer } from "effect"
import { OutboundHttp } from "../infra/outbound/OutboundHttp.ts"
import * as WebhookDispatcher from "../infra/webhooks/WebhookDispatcher.ts"
import * as WebhookEndpointReads from "../infra/webhooks/WebhookEndpointReads.ts"
import * as WebhookEndpoints from "../infra/webhooks/WebhookEndpoints.ts"
import * as WebhookLane from "../infra/webhooks/WebhookLane.ts"
import * as WebhookLeases from "../infra/webhooks/WebhookLeases.ts"
import * as WebhookSources from "../infra/webhooks/WebhookSources.ts"
import { AppConfig } from "./Config.ts"

/** Sources of delivered events; later features (voice, triggers) add theirs here. */
export const SourcesLive = WebhookSources.layer([WebhookSources.executionSource])

type Storage = WebhookLeases.WebhookLeases | WebhookDispatcher.WebhookCheckpoints

// With a database, InfraLive (src/Infra.ts) also provides the SqlClient, without naming it in
// its type; the Postgres variant relies on that, as InfraLive's own cast does.
const StorageLive = Layer.unwrap(
  Effect.map(AppConfig, (config): Layer.Layer<Storage> =>
    config.databaseUrl === undefined
      ? Layer.merge(WebhookLeases.layerMemory, WebhookDispatcher.checkpointsMemory)
      : (Layer.merge(WebhookLeases.layerPg, WebhookDispatcher.checkpointsPg) as unknown as Layer.Layer<Storage>))
)

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

/** Lanes read endpoints before every attempt: coalesced statements with a database, map lookups without. */
const EndpointReadsLive = Layer.unwrap(
  Effect.map(AppConfig, (config): Layer.Layer<WebhookEndpointReads.WebhookEndpointReads, never, WebhookEndpoints.WebhookEndpoints> =>
    config.databaseUrl === undefined
      ? WebhookEndpointReads.layerMemory
      : (WebhookEndpointReads.layerPg as unknown as Layer.Layer<WebhookEndpointReads.WebhookEndpointReads>))
)

export const WebhooksLive = Layer.mergeAll(WebhookDispatcher.layer, EndpointWakes).pipe(
  Layer.provideMerge(WebhookLane.layer),
  Layer.provide(EndpointReadsLive),
  Layer.provideMerge(WebhookEndpoints.layer),
  Layer.provide([SourcesLive, StorageLive, OutboundHttp.layer])
)
