/**
 * The framework's floors for `GET /v1/me`: the raw server's answer (bench/raw-server.ts) served
 * through Effect's HTTP server, with no edge, middleware or store, in one of two ways:
 *
 * - `router`: one HttpRouter route on Effect's Node HTTP server (the least the service could run
 *   on and still be served by Effect);
 * - `httpapi`: the same route declared in an Effect HttpApi (what the service's API is built on),
 *   its answer encoded by a schema.
 *
 * The ratio of each to raw `node:http` is the ceiling of the service's ratio on that layer.
 *
 * Run as a child process by the `GET /v1/me` scenario: `node bench/effect-floors.ts router|httpapi`.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { createServer } from "node:http"

const Me = Schema.Struct({ projectId: Schema.String, keyId: Schema.String })
const me = { projectId: "proj_bench", keyId: "key_bootstrap_1" }

class MeGroup extends HttpApiGroup.make("me").add(HttpApiEndpoint.get("me", "/v1/me", { success: Me })) {}
class FloorApi extends HttpApi.make("floor").add(MeGroup) {}

const ApiRoutes = HttpApiBuilder.layer(FloorApi).pipe(
  Layer.provide(HttpApiBuilder.group(FloorApi, "me", (handlers) => handlers.handle("me", () => Effect.succeed(me))))
)

const RouterRoutes = HttpRouter.add("GET", "/v1/me", Effect.succeed(HttpServerResponse.jsonUnsafe(me)))

const mode = process.argv[2]
if (mode !== "router" && mode !== "httpapi") throw new Error(`usage: effect-floors.ts router|httpapi (got ${mode})`)

/** Says where it listens once it does (the harness waits for this line). */
const Ready = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) => Effect.sync(() => void process.stdout.write(`listening on ${address}\n`)))
)

Layer.mergeAll(
  HttpRouter.serve(mode === "router" ? RouterRoutes : ApiRoutes, { disableListenLog: true, disableLogger: true }),
  Ready
).pipe(
  Layer.provide(NodeHttpServer.layer(() => {
    const server = createServer()
    server.keepAliveTimeout = 60_000
    return server
  }, { port: 0, host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
