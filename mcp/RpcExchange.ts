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
import type { EventIds } from "./EventIds.ts"
import type { LogFeedShape } from "./LogFeed.ts"
import { LATEST_VERSION, type RequestFacts } from "./RpcServer.ts"
import type { McpSession } from "./McpSessions.ts"
import { type GatewayRequest, JsonAnswer } from "./HttpAnswers.ts"
import { isJsonObject } from "../domain/JsonObject.ts"

/**
 * The event ids of one POST stream: the position the stream started from and the stream's own
 * tag and counter (EventIds.ts), so that none repeats in the session; nothing is kept to replay.
 */
const streamIds = (ids: EventIds, sessionId: string, position: Position) => {
  const next = ids.frameIds(sessionId, "p")
  return () => next(position)
}

const primingStore = (nextId: () => string): EventStore => ({
  storeEvent: () => Promise.resolve(nextId()),
  replayEventsAfter: () => Promise.reject(new Error("POST streams are not replayed"))
})

const encoder = new TextEncoder()

/** A message as an SSE event, as the SDK's transport writes one. */
const sseEvent = (message: unknown, id: string) => `event: message\nid: ${id}\ndata: ${JSON.stringify(message)}\n\n`

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
 * JSON-RPC answers the gateway made itself, as the SSE stream the SDK's transport would send them
 * in: the priming event (from 2025-11-25), then the messages, with the ids of a POST stream.
 */
const answerStream = (ids: EventIds, messages: ReadonlyArray<unknown>, session: McpSession, position: Position): Response => {
  const nextId = streamIds(ids, session.sessionId, position)
  const priming = session.protocolVersion >= PRIMING_FROM ? `id: ${nextId()}\ndata: \n\n` : ""
  const text = priming + messages.map((message) => sseEvent(message, nextId())).join("")
  return new Response(text, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" }
  })
}

/** Answers of a batch in JSON: the SDK's (one object for a single answer, an array for more), then `more`. */
const batchJson = (answered: unknown, more: ReadonlyArray<unknown>): string =>
  JSON.stringify([...(Array.isArray(answered) ? answered : [answered]), ...more])

/**
 * Ends the stream's source, with `tail` (when there is one) after its last event, and runs `done`
 * once, at its end or when the reader goes away.
 */
const closing = (body: ReadableStream<Uint8Array>, done: () => void, tail?: () => string): ReadableStream<Uint8Array> => {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done: end, value } = await reader.read()
        if (end) {
          if (tail !== undefined) controller.enqueue(encoder.encode(tail()))
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

export const makeExchange = (servers: (facts: RequestFacts) => Server, feed: LogFeedShape, ids: EventIds) => {
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
     * JSON-RPC answers made outside the SDK (refused by MessageRules.ts), in the form the client
     * asked for, as the SDK answers the others: an SSE stream when `sse`, else JSON (an array for
     * a batch, else the one message).
     */
    answer: (messages: ReadonlyArray<unknown>, session: McpSession, sse: boolean, batch: boolean): Response | JsonAnswer =>
      sse
        ? answerStream(ids, messages, session, feed.position())
        : new JsonAnswer(JSON.stringify(batch ? messages : messages[0]), 200, {}),
    /** Ends the requests of the session that `notifications/cancelled` messages named (`cancelledIds`). */
    cancel: (sessionId: string, requests: ReadonlyArray<RpcId>) => {
      for (const id of requests) inflight.get(keyOf(sessionId, id))?.()
    },
    /**
     * Serves `body` through the SDK. `invalid` are errors answering members of a batch that are
     * no message (already judged): they follow the SDK's answers, in the same JSON array or stream.
     */
    serve: async (
      request: GatewayRequest,
      body: unknown,
      facts: RequestFacts,
      sse: boolean,
      signal: AbortSignal,
      invalid: ReadonlyArray<unknown> = []
    ): Promise<Response> => {
      const server = servers({ ...facts, sentArguments: sentArguments(messagesOf(body)) })
      const nextId = streamIds(ids, facts.session.sessionId, feed.position())
      const transport = new WebStandardStreamableHTTPServerTransport(
        sse ? { enableJsonResponse: false, eventStore: primingStore(nextId) } : { enableJsonResponse: true }
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
          // A single message keeps the SDK's answer; a batch is answered with an array (JSON-RPC
          // 2.0 section 6) even when one answer is in it, where the SDK gives the bare object.
          if (!Array.isArray(body)) return response
          if (invalid.length === 0 && response.status !== 200) return response
          // Only notifications and responses besides the invalid members: their errors alone.
          if (response.status === 202) {
            return sse
              ? answerStream(ids, invalid, facts.session, feed.position())
              : new Response(JSON.stringify(invalid), { status: 200, headers: { "content-type": "application/json" } })
          }
          if (response.status !== 200) return response
          return new Response(batchJson(await response.json(), invalid), { status: 200, headers: response.headers })
        }
        const tail = invalid.length === 0 ? undefined : () => invalid.map((message) => sseEvent(message, nextId())).join("")
        return new Response(closing(response.body, close, tail), { status: response.status, headers: response.headers })
      } catch (error) {
        close()
        throw error
      }
    }
  }
}
