/**
 * The HTTP application: the API's routes and docs behind the edge, as one effect that a Node
 * server (or an in-process web handler in tests) runs per request.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { createServer } from "node:http"
import { AppConfig } from "../src/Config.ts"
import { Api } from "./Api.ts"
import { ConnectionsHttp } from "./ConnectionsHttp.ts"
import { answerClientError, makeEdge, type Route } from "./Edge.ts"
import { AuthenticationLive, ErrorEnvelopeLive, RateLimitLive } from "./MiddlewareLive.ts"
import { ExecutionsHttp } from "./ExecutionsHttp.ts"
import { FilesHttp } from "./FilesHttp.ts"
import { HealthHttp, SystemHttp } from "./SystemHttp.ts"
import { WebhooksHttp } from "./WebhooksHttp.ts"

/** JSON bodies of ordinary routes are small; staged files set their own ceiling. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024

const apiRoutes = (): ReadonlyArray<Route> =>
  Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint) => ({ method: endpoint.method, path: endpoint.path }))
  )

export const routes: ReadonlyArray<Route> = [
  ...apiRoutes(),
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" }
]

const ApiLive = HttpApiBuilder.layer(Api, { openapiPath: "/openapi.json" }).pipe(
  Layer.provide([HealthHttp, SystemHttp, ConnectionsHttp, FilesHttp, WebhooksHttp, ExecutionsHttp]),
  Layer.provide([ErrorEnvelopeLive, AuthenticationLive, RateLimitLive])
)

const DocsLive = HttpApiScalar.layer(Api, { path: "/docs" })

export const AppRoutes = Layer.mergeAll(ApiLive, DocsLive)

/** The per-request effect: routes behind the edge. */
export const makeHttpApp = Effect.gen(function*() {
  const config = yield* AppConfig
  const app = yield* HttpRouter.toHttpEffect(AppRoutes)
  const fileCeiling = 4 * Math.ceil(config.fileMaxBytes / 3) + 16 * 1024
  const edge = makeEdge({
    routes,
    bodyLimit: (method, path) => (method === "POST" && path === "/v1/files" ? fileCeiling : DEFAULT_BODY_LIMIT)
  })
  return edge(app)
})

export const HttpServerLive = Layer.unwrap(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const app = yield* makeHttpApp
    return HttpServer.serve(app).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => createServer().on("clientError", answerClientError), { port: config.port, host: config.host }))
    )
  })
).pipe(Layer.provide(NodeHttpServer.layerHttpServices))
