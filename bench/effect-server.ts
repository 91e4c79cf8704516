/**
 * The framework baseline: the smallest Effect HttpApi server with one POST route shaped like
 * `/v1/execute` (a JSON payload decoded by a schema, a JSON answer), with no edge, middleware or
 * store. The service's figure minus this one is what the service itself adds per request.
 *
 * Run as a child process by the executions benchmark: `node bench/effect-server.ts <port>`.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { createServer } from "node:http"

const Payload = Schema.Struct({ tool: Schema.String, input: Schema.optional(Schema.Unknown), userId: Schema.optional(Schema.String) })

class Echo extends HttpApiGroup.make("echo").add(
  HttpApiEndpoint.post("echo", "/v1/execute", { payload: Payload, success: Schema.Unknown })
) {}

class BenchApi extends HttpApi.make("bench").add(Echo) {}

const EchoLive = HttpApiBuilder.group(BenchApi, "echo", (handlers) =>
  handlers.handle("echo", ({ payload }) => Effect.succeed({ status: "succeeded", output: payload.input ?? null })))

const port = Number(process.argv[2] ?? 0)

/** Says so once the server listens (the harness waits for this line). */
const Ready = Layer.effectDiscard(Effect.map(HttpServer.HttpServer, () => void process.stdout.write("listening\n")))

Layer.mergeAll(
  HttpRouter.serve(HttpApiBuilder.layer(BenchApi).pipe(Layer.provide(EchoLive)), { disableListenLog: true, disableLogger: true }),
  Ready
).pipe(
  Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
