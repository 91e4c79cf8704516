/**
 * One POST's JSON-RPC exchange: a per-request `Server` (RpcServer.ts) on a per-request SDK
 * transport in stateless mode, since sessions are rows the gateway checks itself (McpGateway.ts).
 *
 * - JSON or SSE by `Accept`: with `text/event-stream` the answer is an SSE stream (priming event
 *   first, related notifications, then the response); without it, one JSON response. The SDK
 *   transport insists on an `Accept` that lists both, so it is handed one that does, with
 *   `enableJsonResponse` saying which answer the client asked for.
 * - Its events' ids are unique in the session (EventIds.ts). A POST stream is not replayed: a
 *   client resuming one with GET `Last-Event-ID` gets 405 (McpGateway.ts), not the GET stream's
 *   notifications, which belong to another stream; resending the call is safe, since it carries
 *   the same idempotency key.
 * - `notifications/cancelled` ends the named request when it runs in this process.
 * The `Server` is closed once its answer is complete, or when the client goes away; closing it
 * aborts the handlers still running, which interrupts their effects.
 */
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { type EventStore, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import type { Position } from "../infra/eventlog/EventStore.ts"
import { frameIds } from "./EventIds.ts"
import type { LogFeedShape } from "./LogFeed.ts"
import { LATEST_VERSION, type RequestFacts } from "./RpcServer.ts"
import type { McpSession } from "./McpSessions.ts"
import { type GatewayRequest, JsonAnswer } from "./HttpAnswers.ts"
import { isJsonObject } from "../domain/JsonObject.ts"

/**
 * The event ids of one POST stream: the position the stream started from and the stream's own
 * tag and counter (EventIds.ts), so that none repeats in the session; nothing is kept to replay.
 */
const primingStore = (position: Position): EventStore => {
  const next = frameIds("p")
  return {
    storeEvent: () => Promise.resolve(next(position)),
    replayEventsAfter: () => Promise.reject(new Error("POST streams are not replayed"))
  }
}

type RpcId = string | number


/** The JSON-RPC messages of a body (one, or a batch). */
export const messagesOf = (body: unknown): ReadonlyArray<unknown> => (Array.isArray(body) ? body : [body])

const requestIds = (messages: ReadonlyArray<unknown>): ReadonlyArray<RpcId> =>
  messages.flatMap((m) => (isJsonObject(m) && typeof m.method === "string" && (typeof m.id === "string" || typeof m.id === "number") ? [m.id] : []))

/**
 * The `arguments` of a message's params as the client sent them. The SDK's parse of params builds
 * the arguments object key by key, which takes a `__proto__` key for the prototype and drops it;
 * the tool's input schema must judge what was sent (decisions.md section 2: `__proto__` is an
 * unknown field), as `POST /v1/execute` does.
 */
export const argumentsAsSent = (message: unknown): unknown =>
  isJsonObject(message) && isJsonObject(message.params) ? message.params.arguments : undefined

/** The arguments as sent of a body's `tools/call` requests, by request id. */
const sentArguments = (messages: ReadonlyArray<unknown>): ReadonlyMap<RpcId, unknown> =>
  new Map(messages.flatMap((m) =>
    isJsonObject(m) && m.method === "tools/call" && (typeof m.id === "string" || typeof m.id === "number") ? [[m.id, argumentsAsSent(m)] as const] : []
  ))

export const cancelledIds = (messages: ReadonlyArray<unknown>): ReadonlyArray<RpcId> =>
  messages.flatMap((m) => {
    if (!isJsonObject(m) || m.method !== "notifications/cancelled" || !isJsonObject(m.params)) return []
    const id = m.params.requestId
    return typeof id === "string" || typeof id === "number" ? [id] : []
  })

/**
 * Whether a session's calls keep their `task`: one that negotiated tasks, or of a protocol that
 * has them (where asking for a task unnegotiated is refused, not ignored). Others have it dropped.
 */
export const keepsTasks = (session: McpSession): boolean => session.tasks || session.protocolVersion >= LATEST_VERSION

/**
 * The body without `params.task` on tools/call: for a session whose protocol version has no
 * tasks, a task-augmented call is processed as a plain one (MCP 2025-11-25, "Tasks": a receiver
 * that did not declare tasks ignores the augmentation).
 */
export const withoutTasks = (body: unknown): unknown => (Array.isArray(body) ? body.map(stripTask) : stripTask(body))

const stripTask = (m: unknown) => {
  if (!isJsonObject(m) || m.method !== "tools/call" || !isJsonObject(m.params) || !("task" in m.params)) return m
  const { task: _task, ...params } = m.params
  return { ...m, params }
}

const keyOf = (sessionId: string, id: RpcId) => `${sessionId} ${typeof id} ${id}`

/** The first protocol version whose clients take the SSE priming event (empty data), as the SDK decides. */
const PRIMING_FROM = "2025-11-25"

/**
 * A JSON-RPC answer the gateway made itself, as the SSE stream the SDK's transport would send it
 * in: the priming event (from 2025-11-25), then the message, with the ids of a POST stream.
 */
const answerStream = (message: unknown, protocolVersion: string, position: Position): Response => {
  const next = frameIds("p")
  const priming = protocolVersion >= PRIMING_FROM ? `id: ${next(position)}\ndata: \n\n` : ""
  const text = `${priming}event: message\nid: ${next(position)}\ndata: ${JSON.stringify(message)}\n\n`
  return new Response(text, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
  })
}

/** Ends the stream's source and runs `done` once, at its end or when the reader goes away. */
const closing = (body: ReadableStream<Uint8Array>, done: () => void): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read()
        if (end) {
          controller.close()
          done()
        } else {
          controller.enqueue(value)
        }
      } catch (error) {
        done()
        controller.error(error)
      }
    },
    cancel(reason) {
      done()
      return reader.cancel(reason)
    }
  })
}

export const makeExchange = (servers: (facts: RequestFacts) => Server, feed: LogFeedShape) => {
  const inflight = new Map<string, () => void>()

  return {
    /** Ends every request still running in this process (shutdown). */
    closeAll: () => {
      for (const close of inflight.values()) close()
    },
    /**
     * Makes a request answered outside the SDK (FastPath.ts) reachable by `notifications/cancelled`
     * and by `closeAll`; answers what takes it off again.
     */
    track: (sessionId: string, id: RpcId, close: () => void): (() => void) => {
      const key = keyOf(sessionId, id)
      inflight.set(key, close)
      return () => {
        if (inflight.get(key) === close) inflight.delete(key)
      }
    },
    /**
     * A JSON-RPC answer made outside the SDK (a request refused by MessageRules.ts), in the form
     * the client asked for: an SSE stream when `sse`, else JSON, as the SDK answers the others.
     */
    answer: (message: unknown, session: McpSession, sse: boolean): Response | JsonAnswer =>
      sse ? answerStream(message, session.protocolVersion, feed.position()) : new JsonAnswer(JSON.stringify(message), 200, {}),
    /** Ends the requests of the session that `notifications/cancelled` messages named (`cancelledIds`). */
    cancel: (sessionId: string, ids: ReadonlyArray<RpcId>) => {
      for (const id of ids) inflight.get(keyOf(sessionId, id))?.()
    },
    serve: async (request: GatewayRequest, body: unknown, facts: RequestFacts, sse: boolean, signal: AbortSignal): Promise<Response> => {
      const server = servers({ ...facts, sentArguments: sentArguments(messagesOf(body)) })
      const transport = new WebStandardStreamableHTTPServerTransport(
        sse ? { enableJsonResponse: false, eventStore: primingStore(feed.position()) } : { enableJsonResponse: true }
      )
      const keys = requestIds(messagesOf(body)).map((id) => keyOf(facts.session.sessionId, id))
      let closed = false
      const close = () => {
        if (closed) return
        closed = true
        signal.removeEventListener("abort", close)
        for (const key of keys) if (inflight.get(key) === close) inflight.delete(key)
        void server.close().catch(() => undefined)
      }
      for (const key of keys) inflight.set(key, close)
      signal.addEventListener("abort", close)
      try {
        await server.connect(transport)
        const headers = new Headers({ "content-type": "application/json", accept: "application/json, text/event-stream" })
        // A request may leave the header out (docs/mcp.md); it is still answered at the session's
        // version, which the SDK would otherwise take for 2025-03-26 (no SSE priming event).
        headers.set("mcp-protocol-version", request.headers.get("mcp-protocol-version") ?? facts.session.protocolVersion)
        const response = await transport.handleRequest(new Request(request.url, { method: "POST", headers }), { parsedBody: body })
        const streaming = response.body !== null && (response.headers.get("content-type") ?? "").startsWith("text/event-stream")
        if (!streaming) {
          close()
          return response
        }
        return new Response(closing(response.body, close), { status: response.status, headers: response.headers })
      } catch (error) {
        close()
        throw error
      }
    }
  }
}
