/**
 * The HTTP application: the API's routes and docs behind the edge, as one effect that a Node
 * server (or an in-process web handler in tests) runs per request.
 */
import { Clock, Context, Effect, FileSystem, Layer, Path, Random, References, Scheduler, Scope, Tracer } from "effect"
import { Etag, HttpMiddleware, HttpPlatform, HttpRouter, HttpServer } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { NodeHttpServer } from "@effect/platform-node"
import { createServer } from "node:http"
import { listenHost } from "../../infra/access/DevKey.ts"
import { boolean, integer } from "../../infra/Settings.ts"
import { ApiKeys } from "../../infra/access/ApiKeys.ts"
import { Connections } from "../../infra/connections/Connections.ts"
import { Executions } from "../../infra/executions/Executions.ts"
import { RateLimiter } from "../../infra/access/RateLimiter.ts"
import { Secrets } from "../../infra/access/Secrets.ts"
import { fileSettings, StagedFiles, uploadCeiling } from "../../infra/files/StagedFiles.ts"
import { ViewStore } from "../../infra/eventlog/ViewStore.ts"
import { WebhookEndpoints } from "../../infra/webhooks/WebhookEndpoints.ts"
import { Api } from "../api/Api.ts"
import { ConnectionsHttp } from "./ConnectionsHttp.ts"
import { isDashboardPath, serveDashboard } from "./Dashboard.ts"
import { DOCS_PATH, DocsRoutes, OPENAPI_PATH } from "./Docs.ts"
import { answerClientError, answerConnect, makeEdge, type Route } from "./Edge.ts"
import { isUnpinnedOnly, UsesExecuteBucket } from "../api/Middleware.ts"
import { takeTokens } from "../../infra/access/Throttle.ts"
import { makeGate } from "./Gate.ts"
import { makeMcpMount, MCP_PATH } from "./McpMount.ts"
import { McpGateway } from "../../mcp/index.ts"
import { AuthenticationLive, ErrorEnvelopeLive, RateLimitLive } from "./MiddlewareLive.ts"
import { ExecutionsHttp } from "./ExecutionsHttp.ts"
import { FilesHttp } from "./FilesHttp.ts"
import { HealthHttp, SystemHttp } from "./SystemHttp.ts"
import { WebhooksHttp } from "./WebhooksHttp.ts"
import { trackServer } from "./Drain.ts"
import type { InFlight } from "./RequestLog.ts"
import { makeHealthMounts } from "./Health.ts"
import { Shutdown } from "../../infra/actors/Shutdown.ts"
import { Gauges, Readiness } from "../../infra/observability/index.ts"
import { INGEST_ROUTE, isIngestPath, makeIngestRoute } from "./IngestHttp.ts"
import { SubscriptionsHttp } from "./SubscriptionsHttp.ts"
import { TriggerEventsHttp } from "./TriggerEventsHttp.ts"
import { WebhookRecoveryHttp } from "./WebhookRecoveryHttp.ts"
import { WebhookRecovery } from "../../infra/webhooks/WebhookRecovery.ts"
import { Subscriptions, TriggerHistory } from "../../infra/triggers/index.ts"
import { FILE_NOT_FOUND_MESSAGE } from "../../domain/files/Files.ts"

/** JSON bodies of ordinary routes are small; staged files set their own ceiling. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024

const apiRoutes = (): ReadonlyArray<Route> =>
  Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint): Route => ({
      method: endpoint.method,
      path: endpoint.path,
      // GET and HEAD never judge a body; the other methods take one only with a payload schema.
      takesBody: endpoint.method === "GET" || endpoint.method === "HEAD" || endpoint.payload.size > 0,
      unpinnedOnly: isUnpinnedOnly(group, endpoint),
      executeBucket: Context.get(endpoint.annotations, UsesExecuteBucket),
      // Staged files answer every id they cannot find with the identical 404 (interface.md).
      notFoundMessage: endpoint.path.startsWith("/v1/files/") ? FILE_NOT_FOUND_MESSAGE : undefined
    }))
  )

export const routes: ReadonlyArray<Route> = [
  ...apiRoutes(),
  INGEST_ROUTE,
  { method: "GET", path: OPENAPI_PATH },
  { method: "GET", path: DOCS_PATH }
]

const ApiLive = HttpApiBuilder.layer(Api).pipe(
  Layer.provide([HealthHttp, SystemHttp, ConnectionsHttp, FilesHttp, WebhooksHttp, ExecutionsHttp, SubscriptionsHttp, TriggerEventsHttp, WebhookRecoveryHttp]),
  Layer.provide([ErrorEnvelopeLive, AuthenticationLive, RateLimitLive])
)

export const AppRoutes = Layer.mergeAll(ApiLive, DocsRoutes)

/**
 * Runs `effect` in a context of `keys`' services alone; its requirements must be among them.
 *
 * Why: each API handler keeps the context it was built in and merges it into the request's on
 * every request, which copies both. Built in the whole service's context (about 35 services) and
 * serving requests in it too, that copy was the largest single cost of the API framework. The
 * handlers take what they use when built, and a request needs only the server's own services.
 */
const withOnly = <const Keys extends ReadonlyArray<Context.Key<unknown, unknown>>>(...keys: Keys) =>
<A, E, R extends Context.Service.Identifier<Keys[number]>>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.updateContext(effect, Context.pick(...keys)) as Effect.Effect<A, E, R>

/**
 * How the process logs, traces, tells time and draws randomness, as the runtime or the command
 * line (`--log-level`) set it: references have defaults, so the type check cannot ask for them,
 * and a request served without them would, for one, log past the level and loggers the service
 * was started with.
 */
const runtimeReferences = [
  References.MinimumLogLevel,
  References.CurrentLogLevel,
  References.CurrentLoggers,
  References.CurrentLogAnnotations,
  References.CurrentLogSpans,
  References.LogToStderr,
  References.UnhandledLogLevel,
  References.TracerEnabled,
  References.TracerTimingEnabled,
  References.TracerSpanAnnotations,
  References.TracerSpanLinks,
  Tracer.Tracer,
  Clock.Clock,
  Random.Random
] as const

/** What the HTTP server itself reads while it serves; the scheduler is kept as the runtime set it. */
const serverServices = [
  ...runtimeReferences,
  Scope.Scope,
  Scheduler.Scheduler,
  HttpPlatform.HttpPlatform,
  Etag.Generator,
  FileSystem.FileSystem,
  Path.Path
] as const

/**
 * The router's own limit on a path parameter (100 characters by default) would refuse a long id
 * before the key is counted or a pinned key refused; Node's header size limit already bounds the
 * request line, and an id that cannot be one is the API's 404 (http/api/PathId.ts).
 */
const ROUTER_CONFIG = { maxParamLength: Number.MAX_SAFE_INTEGER }

const buildRoutes = HttpRouter.toHttpEffect(AppRoutes).pipe(
  Effect.provideService(HttpRouter.RouterConfig, ROUTER_CONFIG),
  withOnly(...serverServices, ApiKeys, Connections, Executions, RateLimiter, Secrets, StagedFiles, ViewStore, WebhookEndpoints, WebhookRecovery, Subscriptions, TriggerHistory)
)

/** Paths answered without a key: the API's description and its docs (and ingest, whose path holds its secret). */
const PUBLIC_PATHS = new Set([OPENAPI_PATH, DOCS_PATH, "/health"])

/** The per-request effect: routes behind the edge. */
export const makeHttpApp = (inFlight?: InFlight) => Effect.gen(function*() {
  const app = yield* buildRoutes
  const fileCeiling = uploadCeiling((yield* fileSettings).maxBytes)
  const limiter = yield* RateLimiter
  const edge = makeEdge({
    routes,
    authenticate: (path) => !PUBLIC_PATHS.has(path) && !isIngestPath(path),
    gate: makeGate(yield* ApiKeys),
    throttle: (projectId, execute) => takeTokens(limiter, projectId, execute),
    mounts: new Map([[MCP_PATH, makeMcpMount(yield* McpGateway)], ...makeHealthMounts(yield* Readiness, yield* Gauges)]),
    bodyLimit: (method, path) => (method === "POST" && path === "/v1/files" ? fileCeiling : DEFAULT_BODY_LIMIT),
    // The dashboard's static files: public, outside the API's routes and body rules.
    staticFiles: { matches: isDashboardPath, serve: serveDashboard },
    closing: (yield* Shutdown).stopping,
    endOfTurn: yield* endOfTurnSetting,
    ...(inFlight !== undefined ? { inFlight } : {})
  })
  return edge((yield* makeIngestRoute)(app))
})

/**
 * SERVICE_PORT and SERVICE_HOST. The host defaults to every interface, but to loopback when
 * start-up generated the development key: a key printed to a terminal must not open the
 * service to the network.
 */
export const portSetting = integer("SERVICE_PORT", 8080, 0, 65535)

/** SERVICE_HTTP_END_OF_TURN: answers leave together at the end of the loop's turn (EndOfTurn.ts); `false` writes each as it finishes. */
export const endOfTurnSetting = boolean("SERVICE_HTTP_END_OF_TURN", true)

export const listenSettings = Effect.gen(function*() {
  const port = yield* portSetting
  return { port, host: yield* listenHost }
})

/**
 * Bounds on Node's server (docs/configuration.md): headers must arrive within
 * SERVICE_HTTP_HEADERS_TIMEOUT_MS (10 s) and a whole request within SERVICE_HTTP_REQUEST_TIMEOUT_MS
 * (60 s; Node allows 300 s), and at most SERVICE_HTTP_MAX_CONNECTIONS (4,096) are open at once:
 * past it Node closes a new connection as soon as it opens.
 */
export const serverLimits = Effect.all({
  headersTimeoutMs: integer("SERVICE_HTTP_HEADERS_TIMEOUT_MS", 10_000, 100, 600_000),
  requestTimeoutMs: integer("SERVICE_HTTP_REQUEST_TIMEOUT_MS", 60_000, 100, 3_600_000),
  maxConnections: integer("SERVICE_HTTP_MAX_CONNECTIONS", 4_096, 1, 1_000_000)
})

/**
 * Node's server within `serverLimits`; an idle keep-alive connection closes after 5 s.
 * `Expect: 100-continue` is not answered by Node at once (Effect's server takes `checkContinue`):
 * the edge sends `100 Continue` only once the key is verified and the body is wanted.
 * Another expectation is ignored.
 */
const makeNodeServer = (limits: Effect.Success<typeof serverLimits>) => () => {
  const server = createServer({
    // A whole request, headers included, must arrive within the request timeout: a headers
    // timeout past it (the 10 s default under a shorter request timeout) means that one.
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: 5_000,
    // The edge answers a request without Host itself, with the envelope (Edge.ts).
    requireHostHeader: false,
    // How often Node looks for connections past those timeouts (30 s by default).
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs)
  })
  server.maxConnections = limits.maxConnections
  server.on("clientError", answerClientError)
  server.on("connect", answerConnect)
  // Any other expectation than 100-continue would get Node's bare 417; RFC 9110 section 10.1.1
  // lets a server ignore it, so the request is served as if it had none, with the envelope.
  server.on("checkExpectation", (request, response) => server.emit("request", request, response))
  return server
}

export const HttpServerLive = Layer.unwrap(
  Effect.gen(function*() {
    const listen = yield* listenSettings
    const node = trackServer(makeNodeServer(yield* serverLimits))
    const app = yield* makeHttpApp(node.inFlight)
    const shutdown = yield* Shutdown
    // Effect's own server span records the whole URL (the ingest path holds a secret): the edge
    // makes the request's span instead (RequestLog.ts).
    const serve = Layer.effectDiscard(HttpServer.HttpServer.use((server) =>
      server.serve(app).pipe(Effect.provideService(HttpMiddleware.TracerDisabledWhen, () => true), withOnly(...serverServices, HttpMiddleware.TracerDisabledWhen))
    ))
    // Built last, so it runs first when the service stops: requests and attempts in flight
    // finish before the server and the features close (Drain.ts).
    const drain = Layer.effectDiscard(Effect.addFinalizer(() => node.drain(shutdown)))
    return drain.pipe(
      Layer.provideMerge(serve),
      Layer.provideMerge(NodeHttpServer.layer(node.create, listen))
    )
  })
).pipe(Layer.provide(NodeHttpServer.layerHttpServices))
