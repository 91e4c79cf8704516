/**
 * `/mcp` on the service's port: the MCP gateway (mcp/) serves every method of the path itself
 * (key, origin, limits, sessions, body ceiling), so the edge hands it the request as is and
 * sends its answer back.
 *
 * A POST whose client does not want SSE gets its body read at once from Node (up to the
 * gateway's ceiling) and handed over as bytes, and a JSON answer is sent as text: bridging an
 * Effect stream into a web stream and back cost a `tools/call` more CPU than the call itself
 * (bench/scenarios/mcp.ts). Other requests reach the gateway as a web `Request` whose signal
 * fires when the client goes away; SSE answers, and GET streams, are streamed unbuffered.
 */
import { acceptsEventStream } from "../../mcp/Accept.ts"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http"
import type { McpGateway } from "../../mcp/index.ts"
import { type Answer, BODY_LIMIT, type GatewayRequest, JsonAnswer, methodNotAllowed } from "../../mcp/HttpAnswers.ts"
import { EdgeFailure } from "./Envelope.ts"
import { normalized } from "../../domain/Errors.ts"

export const MCP_PATH = "/mcp"

/** The Node response behind a request, where there is one: its `close` is the client going away. */
const nodeResponseOf = (request: HttpServerRequest.HttpServerRequest): ServerResponse | undefined => {
  const candidate = (request as { readonly resolvedResponse?: unknown }).resolvedResponse
  return typeof candidate === "object" && candidate !== null && "once" in candidate ? candidate as ServerResponse : undefined
}

/** The body of a Node request, up to `limit` bytes (one more tells the gateway it was too long). */
const readBody = (message: IncomingMessage, limit: number) =>
  Effect.callback<Uint8Array | undefined>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const done = (value: Uint8Array | undefined) => {
      message.off("data", onData).off("end", onEnd).off("error", onError)
      resume(Effect.succeed(value))
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      chunks.push(chunk)
      if (size > limit) {
        message.pause()
        done(Buffer.concat(chunks, size))
      }
    }
    const onEnd = () => done(Buffer.concat(chunks, size))
    const onError = () => done(undefined)
    message.on("data", onData).on("end", onEnd).on("error", onError)
  })

/**
 * A plain JSON POST as the gateway reads it, with its body already read: no web `Request` (its
 * `Headers`, its URL parsing, its signal) is built for it. The client going away interrupts the
 * request's fiber, which ends any call it runs.
 */
const readRequest = (request: HttpServerRequest.HttpServerRequest, body: Uint8Array): GatewayRequest => ({
  method: "POST",
  url: `http://${request.headers["host"] ?? "localhost"}${request.url}`,
  headers: {
    get: (name) => {
      const value: unknown = request.headers[name.toLowerCase()]
      return typeof value === "string" ? value : null
    }
  },
  body: null,
  preread: body
})

/** The web request for the gateway, streaming, whose signal fires when the client goes away. */
const toWebRequest = (request: HttpServerRequest.HttpServerRequest) => {
  const controller = new AbortController()
  // Aborted only when the client went away before the answer was written (an abort makes a
  // DOMException, which costs more than a small request).
  const node = nodeResponseOf(request)
  node?.once("close", () => {
    if (!node.writableFinished) controller.abort()
  })
  return HttpServerRequest.toWeb(request, { signal: controller.signal }).pipe(
    Effect.mapError(() => new EdgeFailure(400, normalized("invalid_input", "The request target is not valid.")))
  )
}

/** The request for the gateway: read at once for a plain JSON POST, streaming otherwise. */
const gatewayRequest = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest) {
  const source = request.source
  const wantsStream = acceptsEventStream(request.headers["accept"])
  if (request.method === "POST" && !wantsStream && source instanceof IncomingMessage) {
    const body = yield* readBody(source, BODY_LIMIT)
    if (body !== undefined) return readRequest(request, body)
  }
  return yield* toWebRequest(request)
})

/** The gateway's answer: its text when it made the JSON itself, a stream when it is SSE. */
const fromAnswer = (answer: Answer) => {
  if (answer instanceof JsonAnswer) {
    return Effect.succeed(HttpServerResponse.text(answer.text, { status: answer.status, headers: answer.headers, contentType: "application/json" }))
  }
  const response = answer
  const type = response.headers.get("content-type") ?? ""
  if (response.body === null || type.startsWith("text/event-stream")) {
    // A web Response made without a status text has an empty one, which Node would send as the
    // reason phrase (`HTTP/1.1 200 `): the standard phrase is sent instead.
    const streamed = HttpServerResponse.fromWeb(response)
    return Effect.succeed(response.statusText === "" ? HttpServerResponse.setStatus(streamed, response.status, STATUS_CODES[response.status]) : streamed)
  }
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    if (name !== "content-type" && name !== "content-length") headers[name] = value
  })
  return Effect.map(
    Effect.promise(() => response.text()),
    (text) => HttpServerResponse.text(text, { status: response.status, headers, contentType: type || "application/json" })
  )
}

/** The mount of `/mcp`; the gateway answers with the edge's request id, the one the request's log line has. */
export const makeMcpMount = (gateway: McpGateway["Service"]) =>
  Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest, requestId: string) {
    // A method a web Request cannot carry (Node's parser takes TRACE) gets the gateway's 405
    // for any method it does not serve, before a web request is made of it.
    if (UNCARRIED_METHODS.has(request.method.toUpperCase())) return yield* fromAnswer(methodNotAllowed(requestId))
    return yield* fromAnswer(yield* gateway.handle(yield* gatewayRequest(request), requestId))
  })

/** Fetch's forbidden methods, which `new Request` throws on (Fetch standard, "forbidden method"). */
const UNCARRIED_METHODS = new Set(["CONNECT", "TRACE", "TRACK"])
