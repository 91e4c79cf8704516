/**
 * The running service as one layer: stores, actors and the HTTP server, given a configuration.
 */
import { Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { ApiKeys } from "../infra/ApiKeys.ts"
import * as Connections from "../infra/Connections.ts"
import { HttpServerLive } from "../http/Server.ts"
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

export const AppLive = Layer.mergeAll(ListenLog.pipe(Layer.provideMerge(HttpServerLive)), DevKey, EntitiesLive).pipe(
  Layer.provideMerge(ServicesLive),
  Layer.provideMerge(WebhooksLive),
  Layer.provideMerge(InfraLive)
)
