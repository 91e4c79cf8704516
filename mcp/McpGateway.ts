/**
 * The MCP gateway's HTTP edge (spec, "MCP gateway"; decisions.md section 7): POST, GET and
 * DELETE `/mcp`, as one `handle(request) => Effect<Answer>` that the HTTP server mounts.
 *
 * In order, for every request: a `Request-Id` (the HTTP edge's, which its log line has); transport security (`Origin`, and `Host` when the
 * service is bound to loopback: McpSettings.ts), with CORS for allowed origins; the method; the
 * bearer key (401 with the envelope and `WWW-Authenticate: Bearer`); one token of the project's
 * standard bucket (429 with `Retry-After`); the user header against a pinned key (403). Then the
 * session: `initialize`
 * creates its row, every other request must name a session that exists, is not past its 24 h,
 * and was made with the same key and user, else 404. POST bodies are read to 1 MiB (413) before
 * parsing. The JSON-RPC exchange itself is RpcExchange.ts, the GET stream SessionStream.ts.
 *
 * Why no transport per session: the SDK's stateful transport keeps its session in the process
 * that initialized it. Sessions here are rows (McpSessions.ts), so every process can check any
 * session, and each request gets a fresh stateless transport (docs/mcp.md, "Design choices").
 */
import { Clock, Context, Effect, Schema } from "effect"
import { InitializeRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js"
import { normalized } from "../domain/Errors.ts"
import type { ApiKeys, Principal } from "../infra/access/ApiKeys.ts"
import type { Decision, RateLimiter } from "../infra/access/RateLimiter.ts"
import { STANDARD_EXHAUSTED } from "../infra/access/Throttle.ts"
import { newRequestId } from "../infra/Ids.ts"
import type { EventIds } from "./EventIds.ts"
import { comparePositions, type Position } from "../infra/eventlog/EventStore.ts"
import { isStoreOutage, storeUnavailableAnswer } from "../infra/eventlog/StoreOutage.ts"
import * as Answers from "./HttpAnswers.ts"
import { headerMatches, keyHash, sessionUser, USER_HEADER } from "./Identity.ts"
import type { LogFeedShape } from "./LogFeed.ts"
import { isSessionId, type McpSession, type McpSessions, newSessionId, SESSION_TTL_MS } from "./McpSessions.ts"
import { isLoopbackHost, type McpSettingsShape, originOf } from "./McpSettings.ts"
import * as Rules from "./MessageRules.ts"
import { cancelledIds, keepsTasks, makeExchange, messagesOf, withoutTasks } from "./RpcExchange.ts"
import type { CallCancels } from "./CallCancels.ts"
import { LATEST_VERSION } from "./RpcServer.ts"
import type { makeSessionStreams } from "./SessionStream.ts"
import type { FastPath } from "./FastPath.ts"
import { isJsonObject } from "../domain/JsonObject.ts"
import { acceptsAnAnswer, acceptsEventStream } from "./Accept.ts"

const unknownEventId = () => Answers.rpcError(400, -32000, "Bad Request: Last-Event-ID is not an event id of this session")
/**
 * A GET resuming a POST answer's stream: such a stream is not kept (SessionStream.ts), so there is
 * none to resume, and a GET is answered with a stream or 405 (MCP 2025-11-25, transports, "Listening
 * for Messages from the Server"). The official SDK client takes 405 as "no stream here" and stops;
 * it resumes a POST stream that ended with a JSON-RPC error (it takes only a result for an end).
 */
const postStreamNotResumable = () =>
  Answers.withHeaders(
    Answers.rpcError(405, -32000, "Method Not Allowed: the stream of a POST answer is not kept, so it cannot be resumed; send the request again (its idempotency key makes that safe)"),
    { allow: "POST, DELETE" }
  )

/** The later of a resumption's position and the session's start, when that is known. */
const latest = (position: Position, floor: Position | undefined): Position =>
  floor !== undefined && comparePositions(floor, position) > 0 ? floor : position

export class McpGateway extends Context.Service<McpGateway, {
  /**
   * Serves POST, GET and DELETE `/mcp` completely: auth, origin, limits and sessions included.
   * `requestId` is the id the HTTP edge logs the request under (a new one when none is given):
   * the answer's `Request-Id`, its envelope's `requestId` and the gateway's own log lines use it.
   */
  readonly handle: (request: Answers.GatewayRequest, requestId?: string) => Effect.Effect<Answers.Answer>
}>()("app/mcp/McpGateway") {}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

/** Capability names a session keeps, at each of the two levels; names longer than this are dropped. */
const MAX_CAPABILITY_NAMES = 32
const MAX_CAPABILITY_NAME = 64

const namesOf = (value: unknown): Record<string, Record<string, never>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? Object.fromEntries(
      Object.keys(value).filter((name) => name.length <= MAX_CAPABILITY_NAME).slice(0, MAX_CAPABILITY_NAMES).map((name) => [name, {}])
    )
    : {}

/**
 * What a session keeps of the client's capabilities: the names it declared, and those under
 * `experimental`, without their contents, which the gateway never reads (it decides `tasks` at
 * initialize). A client's capabilities may be most of a 1 MiB body and nested without end; kept
 * as sent for 24 hours, they let one key fill the process's memory, made every request of the
 * session read a large row, and overflowed the stack writing one (outside audit).
 */
const keptCapabilities = (capabilities: Record<string, unknown>): Schema.Json => {
  const names = namesOf(capabilities)
  return "experimental" in names ? { ...names, experimental: namesOf(capabilities.experimental) } : names
}


const rateHeaders = (decision: Decision): Record<string, string> => ({
  "ratelimit-limit": String(decision.limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(decision.resetAt)
})

/** A message refused before any session or handler sees it (MessageRules.ts): 400 with the JSON-RPC error. */
const refusal = (refused: Rules.Refusal) => Answers.rpcError(400, refused.code, refused.message, refused.id)


export interface GatewayParts {
  readonly settings: McpSettingsShape
  readonly keys: ApiKeys["Service"]
  readonly limiter: RateLimiter["Service"]
  readonly sessions: McpSessions["Service"]
  readonly feed: LogFeedShape
  readonly exchange: ReturnType<typeof makeExchange>
  readonly cancels: CallCancels
  readonly streams: ReturnType<typeof makeSessionStreams>
  readonly fast: FastPath
  readonly ids: EventIds
}

interface Caller {
  readonly principal: Principal
  readonly keyHash: string
  readonly headerUserId: string | undefined
  /** Whether the request's key still holds (a revoke ends what it opened); true while the store is away. */
  readonly keyValid: Effect.Effect<boolean>
}

export const makeHandle = (parts: GatewayParts) => {
  const { cancels, exchange, fast, feed, ids, keys, limiter, sessions, settings, streams } = parts

  const isAllowedOrigin = (origin: string) => settings.allowedOrigins.has(originOf(origin) ?? origin)

  /** Origin and Host against DNS rebinding (McpSettings.ts). */
  const transportRefusal = (request: Answers.GatewayRequest, requestId: string): Answers.Answer | undefined => {
    const origin = request.headers.get("origin")
    if (origin !== null && !isAllowedOrigin(origin)) {
      return Answers.forbidden(requestId, `Origin ${origin} is not allowed.`)
    }
    const host = request.headers.get("host") ?? new URL(request.url).host
    if (settings.loopbackHostsOnly && !isLoopbackHost(host)) return Answers.forbidden(requestId, `Host ${host} is not allowed.`)
    return undefined
  }

  /** The key, the standard token and the user header: a caller, or the refusal. */
  const admit = Effect.fnUntraced(function*(request: Answers.GatewayRequest, requestId: string) {
    const presented = BEARER.exec(request.headers.get("authorization") ?? "")?.[1]
    if (presented === undefined) {
      return Answers.unauthorized(requestId, "auth_missing", "Send the project API key as Authorization: Bearer <key>.")
    }
    const principal = yield* Effect.orDie(keys.verify(presented))
    if (principal === undefined) return Answers.unauthorized(requestId, "auth_expired", "The API key is invalid or revoked.")
    const decision = yield* Effect.orDie(limiter.take(principal.projectId, "standard"))
    const limits = rateHeaders(decision)
    if (!decision.allowed) {
      const retryAfter = decision.retryAfter ?? 1
      const error = normalized("rate_limited", STANDARD_EXHAUSTED, retryAfter)
      return Answers.envelope(requestId, 429, error, { ...limits, "retry-after": String(retryAfter) })
    }
    const headerUserId = request.headers.get(USER_HEADER) ?? undefined
    const checked = sessionUser(undefined, headerUserId, principal.userId)
    if (!("userId" in checked)) return Answers.envelope(requestId, checked.code === "invalid_input" ? 422 : 403, normalized(checked.code, checked.message), limits)
    const keyValid = keys.verify(presented).pipe(Effect.map((still) => still !== undefined), Effect.orElseSucceed(() => true))
    return { caller: { principal, keyHash: keyHash(presented), headerUserId, keyValid } satisfies Caller, limits }
  })

  /** The session a later request names, or the answer for a missing, unknown or foreign one. */
  const sessionOf = Effect.fnUntraced(function*(request: Answers.GatewayRequest, caller: Caller, id: Answers.RpcId) {
    const sessionId = request.headers.get("mcp-session-id")
    if (sessionId === null) return Answers.rpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required", id)
    const session = isSessionId(sessionId) ? yield* Effect.orDie(sessions.get(sessionId)) : undefined
    if (
      session === undefined || session.keyHash !== caller.keyHash || session.projectId !== caller.principal.projectId ||
      !headerMatches(settings.userId, session.userId, caller.headerUserId)
    ) return Answers.sessionNotFound(id)
    const version = request.headers.get("mcp-protocol-version")
    if (version !== null && version !== session.protocolVersion) {
      return Answers.rpcError(400, -32000, `Bad Request: MCP-Protocol-Version ${version} is not this session's (${session.protocolVersion}).`, id)
    }
    return session
  })

  /** A new session from an initialize request, or the answer refusing it. */
  const initialize = Effect.fnUntraced(function*(body: unknown, caller: Caller, requestId: string) {
    const parsed = InitializeRequestSchema.safeParse(body)
    if (!parsed.success) return Answers.rpcError(400, -32602, "Invalid initialize request.", Rules.idOf(body))
    const { capabilities, protocolVersion: asked } = parsed.data.params
    const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(asked) ? asked : LATEST_VERSION
    const user = sessionUser(settings.userId, caller.headerUserId, caller.principal.userId)
    if (!("userId" in user)) return Answers.envelope(requestId, user.code === "invalid_input" ? 422 : 403, normalized(user.code, user.message))
    const now = yield* Clock.currentTimeMillis
    const session: McpSession = {
      sessionId: newSessionId(),
      keyHash: caller.keyHash,
      projectId: caller.principal.projectId,
      pinnedUserId: caller.principal.userId,
      userId: user.userId,
      protocolVersion,
      clientCapabilities: keptCapabilities(capabilities),
      tasks: protocolVersion >= LATEST_VERSION && (capabilities.tasks !== undefined || capabilities.experimental?.tasks !== undefined),
      createdMs: now,
      createdPosition: feed.position(),
      expiresMs: now + SESSION_TTL_MS,
      streamToken: undefined
    }
    yield* Effect.orDie(sessions.create(session))
    // Expired rows go in small batches as new sessions come (a bounded cost per initialize).
    yield* Effect.ignore(sessions.sweep(20))
    return session
  })

  const post = Effect.fnUntraced(function*(request: Answers.GatewayRequest, caller: Caller, requestId: string) {
    if (!acceptsAnAnswer(request.headers.get("accept"))) {
      return Answers.rpcError(406, -32000, "Not Acceptable: Client must accept application/json or text/event-stream")
    }
    const badBody = Answers.bodyHeadersRefused(requestId, request.headers)
    if (badBody !== undefined) return badBody
    const bytes = yield* Effect.promise(() => Answers.readLimited(request, Answers.BODY_LIMIT))
    if (bytes === undefined) return Answers.bodyTooLarge(requestId)
    const text = bytes === null ? undefined : Answers.decodeUtf8(bytes)
    if (text !== undefined && Rules.nestedDeeperThan(text, Rules.MAX_NESTING)) return refusal(Rules.tooDeep)
    const parsed = text === undefined ? undefined : Answers.parseJson(text)
    if (parsed === undefined) return Answers.rpcError(400, -32700, "Parse error: Invalid JSON")
    const body = parsed.value
    const refused = Rules.notAMessage(body)
    if (refused !== undefined) return refusal(refused)
    const messages = messagesOf(body)
    const initializing = messages.some((m) => isJsonObject(m) && m.method === "initialize")
    // MCP 2025-03-26, "Lifecycle": the initialization request MUST NOT be part of a batch.
    if (initializing && Rules.isBatch(body)) return Answers.rpcError(400, -32600, "Invalid Request: initialize is sent alone, never in a batch.")
    if (initializing) {
      const notRequest = Rules.initializeRefused(body)
      if (notRequest !== undefined) return refusal(notRequest)
      // A new session starts with an initialize sent without one (MCP, "Session Management"); one
      // sent with a session id opens nothing, known or not (as the SDK's transport answers).
      if (request.headers.get("mcp-session-id") !== null) {
        return Answers.rpcError(400, -32600, "Invalid Request: initialize opens a new session and is sent without Mcp-Session-Id.", Rules.idOf(body))
      }
    }
    const session = initializing ? yield* initialize(body, caller, requestId) : yield* sessionOf(request, caller, Rules.idOf(body))
    if (Answers.isAnswer(session)) return session
    const batch = Rules.isBatch(body) ? Rules.batchRefused(session.protocolVersion) : undefined
    if (batch !== undefined) return Answers.withHeaders(refusal(batch), { "mcp-session-id": session.sessionId })
    const sse = acceptsEventStream(request.headers.get("accept"))
    // A batch's members that are no message are answered with their own errors, the others as usual.
    const members = Rules.isBatch(body) ? Rules.batchMembers(body) : undefined
    const invalid = members?.refused.map(Rules.errorOf) ?? []
    if (members !== undefined && members.valid.length === 0) {
      return Answers.withHeaders(exchange.answer(invalid, session, sse, true), { "mcp-session-id": session.sessionId })
    }
    const sent = members === undefined ? body : members.valid
    // A cancelled plain tools/call ends, unanswered, and then its execution is cancelled (CallCancels.ts).
    const cancelled = cancelledIds(messagesOf(sent))
    if (cancelled.length > 0) {
      const cancelExecutions = cancels.take(session.sessionId, cancelled)
      exchange.cancel(session.sessionId, cancelled)
      yield* cancelExecutions
    }
    const exchanged = keepsTasks(session) ? sent : withoutTasks(sent)
    const checked = Rules.isBatch(exchanged) ? undefined : Rules.checkRequest(exchanged, session.protocolVersion)
    if (checked?._tag === "Refused") {
      // Answered as the SDK answers every other request: as SSE when the client takes it.
      const answer = exchange.answer([Rules.errorOf(checked.refusal)], session, sse, false)
      return Answers.withHeaders(answer, { "mcp-session-id": session.sessionId })
    }
    const plain = sse || initializing || checked?._tag !== "Parsed" ? undefined : fast(exchanged, checked.value, session, caller.headerUserId)
    if (plain !== undefined) return Answers.withHeaders(yield* plain, { "mcp-session-id": session.sessionId })
    const response = yield* Effect.tryPromise({
      try: (signal) => exchange.serve(request, exchanged, { session, headerUserId: caller.headerUserId }, sse, signal, invalid),
      catch: (cause) => cause
    }).pipe(Effect.orDie)
    return Answers.withHeaders(response, { "mcp-session-id": session.sessionId })
  })

  const get = Effect.fnUntraced(function*(request: Answers.GatewayRequest, caller: Caller) {
    if (!acceptsEventStream(request.headers.get("accept"))) {
      return Answers.rpcError(406, -32000, "Not Acceptable: Client must accept text/event-stream")
    }
    const session = yield* sessionOf(request, caller, null)
    if (Answers.isAnswer(session)) return session
    const lastEventId = request.headers.get("last-event-id")
    const resumed = lastEventId === null ? undefined : ids.parse(session.sessionId, lastEventId)
    if (lastEventId !== null && resumed === undefined) return unknownEventId()
    if (resumed?._tag === "After" && (yield* streams.pastEnd(resumed.position))) return unknownEventId()
    // Never from before the session: what the log held then was never the session's to carry.
    const from = resumed?._tag === "After" ? latest(resumed.position, session.createdPosition) : feed.position()
    if (resumed?._tag === "FromNow") return postStreamNotResumable()
    return new Response(streams.open(session, from, resumed?._tag === "After", caller.keyValid), {
      headers: {
        "content-type": "text/event-stream",
        "cache-control": "no-cache, no-transform",
        "x-accel-buffering": "no",
        "mcp-session-id": session.sessionId
      }
    })
  })

  const remove = Effect.fnUntraced(function*(request: Answers.GatewayRequest, caller: Caller) {
    const session = yield* sessionOf(request, caller, null)
    if (Answers.isAnswer(session)) return session
    yield* Effect.orDie(sessions.remove(session.sessionId))
    streams.end(session.sessionId)
    return new Response(null, { status: 204 })
  })

  const serve = Effect.fnUntraced(function*(request: Answers.GatewayRequest, requestId: string) {
    const method = request.method.toUpperCase()
    const refused = transportRefusal(request, requestId)
    if (refused !== undefined) return refused
    const origin = request.headers.get("origin")
    if (method === "OPTIONS" && origin !== null) return Answers.preflight(origin)
    if (method !== "POST" && method !== "GET" && method !== "DELETE") return Answers.methodNotAllowed(requestId)
    const admitted = yield* admit(request, requestId)
    if (Answers.isAnswer(admitted)) return admitted
    const { caller } = admitted
    const response = method === "POST"
      ? yield* post(request, caller, requestId)
      : method === "GET"
      ? yield* get(request, caller)
      : yield* remove(request, caller)
    return Answers.withHeaders(response, admitted.limits)
  })

  return (request: Answers.GatewayRequest, given?: string): Effect.Effect<Answers.Answer> =>
    Effect.suspend(() => {
      const requestId = given ?? newRequestId()
      return serve(request, requestId).pipe(
        Effect.catchDefect((defect) =>
          // The store away (Postgres stopped, restarting or hung) is answered as every /v1 route
          // answers it (docs/operations.md): 503, retryable, after a second; not an error line.
          isStoreOutage(defect)
            ? Effect.sync(() => {
              const { status, error, headers } = storeUnavailableAnswer()
              return Answers.envelope(requestId, status, error, headers)
            })
            : Effect.as(
              Effect.logError("MCP request failed", defect).pipe(Effect.annotateLogs({ requestId })),
              Answers.envelope(requestId, 500, { code: "provider_unavailable", message: "Internal error.", retryable: true })
            )
        ),
        Effect.map((response) => {
          // An allowed browser origin may read the answer.
          const origin = request.headers.get("origin")
          const cors = origin !== null && isAllowedOrigin(origin) ? Answers.corsHeaders(origin) : {}
          return Answers.withHeaders(response, { "request-id": requestId, ...cors })
        })
      )
    })
}
