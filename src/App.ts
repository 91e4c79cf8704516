/**
 * The running service as one layer: stores, actors and the HTTP server, given a configuration.
 */
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { ApiKeys } from "../infra/access/ApiKeys.ts"
import * as Connections from "../infra/connections/Connections.ts"
import * as ExecutionActor from "../infra/executions/ExecutionActor.ts"
import { AttachmentFiles, ConnectionResolver } from "../infra/executions/ExecutionPorts.ts"
import * as ExecutionRecovery from "../infra/executions/ExecutionRecovery.ts"
import * as Executions from "../infra/executions/Executions.ts"
import { layerWithOutbound as AdaptersLive } from "../infra/providers/index.ts"
import { attachmentPort, StagedFiles } from "../infra/files/StagedFiles.ts"
import { HttpServerLive } from "../http/server/Server.ts"
import { EntitiesLive } from "./Actors.ts"
import { AppConfig } from "./Config.ts"
import { InfraLive } from "./Infra.ts"
import { WebhooksLive } from "./Webhooks.ts"

/** In memory mode with no configured key, one unpinned key for `proj_dev` is made and printed once. */
const DevKey = Layer.effectDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (config.databaseUrl !== undefined || config.apiKeys.length > 0) return
    const keys = yield* ApiKeys
    const { key } = yield* Effect.orDie(keys.create({ projectId: "proj_dev" }))
    process.stdout.write(`Development API key for project proj_dev (memory mode, shown once): ${Redacted.value(key)}\n`)
  })
)

const ListenLog = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) => Effect.logInfo(`listening on ${address}`))
)

/** Services built on the stores, shared by the HTTP handlers and the actors. */
const ServicesLive = Connections.layer

/** The executor's ports, served by the connection store and the staged files. */
const ExecutionPortsLive = Layer.mergeAll(
  Layer.effect(ConnectionResolver, Effect.map(Connections.Connections, (connections) => ({ resolve: connections.resolve }))),
  Layer.effect(AttachmentFiles, Effect.map(StagedFiles, attachmentPort))
)

/** The executor: the actor, its start-up recovery and the Executions service. */
export const ExecutionsLive = Layer.mergeAll(Executions.layer, ExecutionRecovery.layer).pipe(
  Layer.provideMerge(ExecutionActor.layer),
  Layer.provideMerge(ExecutionPortsLive),
  Layer.provide(AdaptersLive)
)

export const AppLive = Layer.mergeAll(ListenLog.pipe(Layer.provideMerge(HttpServerLive)), DevKey, EntitiesLive).pipe(
  Layer.provideMerge(ExecutionsLive),
  Layer.provideMerge(ServicesLive),
  Layer.provideMerge(WebhooksLive),
  Layer.provideMerge(InfraLive)
)
