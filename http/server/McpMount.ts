/**
 * `/mcp` on the service's port: the MCP gateway (mcp/) serves every method of the path itself
 * (key, origin, limits, sessions, body ceiling), so the edge hands it the request as is, as a
 * web `Request` whose body streams and whose signal fires when the client goes away, and streams
 * its web `Response` back unbuffered (SSE streams live for as long as the client listens).
 */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { ServerResponse } from "node:http"
import type { McpGateway } from "../../mcp/index.ts"
import { EdgeFailure } from "./Envelope.ts"
import { normalized } from "../../domain/Errors.ts"

export const MCP_PATH = "/mcp"

/** The Node response behind a request, where there is one: its `close` is the client going away. */
const nodeResponseOf = (request: HttpServerRequest.HttpServerRequest): ServerResponse | undefined => {
  const candidate = (request as { readonly resolvedResponse?: unknown }).resolvedResponse
  return typeof candidate === "object" && candidate !== null && "once" in candidate ? candidate as ServerResponse : undefined
}

export const makeMcpMount = (gateway: McpGateway["Service"]) =>
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
    const controller = new AbortController()
    nodeResponseOf(request)?.once("close", () => controller.abort())
    const web = yield* HttpServerRequest.toWeb(request, { signal: controller.signal }).pipe(
      Effect.mapError(() => new EdgeFailure(400, normalized("invalid_input", "The request target is not valid.")))
    )
    const response = yield* gateway.handle(web)
    return HttpServerResponse.fromWeb(response)
  })
