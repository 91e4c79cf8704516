/**
 * The outermost layer of every request, before routing: a request id, the body rules (a JSON
 * content type, and a per-route byte ceiling enforced while the body streams in, before any
 * parsing), unknown routes (404) and wrong methods (405), and the envelope for anything that
 * escapes the API's own middleware. Every response leaves with a `Request-Id` header.
 */
import { Cause, Effect } from "effect"
import { IncomingMessage } from "node:http"
import type { Duplex } from "node:stream"
import { normalized } from "../../domain/Errors.ts"
import { bodyHeadersRefusal } from "../../domain/MediaType.ts"
import { unstorableMessage, type Unstorable, unstorableText } from "../../domain/Storable.ts"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpServerResponse as Response } from "effect/http"
import { newRequestId } from "../../infra/Ids.ts"
import { CurrentRequest, type RequestMeta } from "../api/Caller.ts"
import { endOfTurn } from "./EndOfTurn.ts"
import { rateHeaders, rateLimitedError } from "../../infra/access/Throttle.ts"
import type { Decision } from "../../infra/access/RateLimiter.ts"
import { pipelinedBehind } from "./Pipelining.ts"
import { endBody, LARGE_BODY, readLimited, utf8Text, withBody } from "./RequestBody.ts"
import { type InFlight, logged, type RequestTrace } from "./RequestLog.ts"
import type { Gate, Verdict } from "./Gate.ts"
import {
  bodyTooLarge,
  causeFailure,
  causeResponse,
  requestTimeout,
  EdgeFailure,
  envelopeResponse,
  idNotFound,
  malformedBody,
  methodNotAllowed,
  routeNotFound,
  NOT_JSON,
  unsupportedMediaType
} from "./Envelope.ts"

export interface Route {
  readonly method: string
  readonly path: string
  /**
   * False for a POST, PATCH or DELETE that takes no body (a rotate, a cancel, a delete): a body
   * sent anyway must be empty or `{}`; one that is not JSON is 400 and one naming a field 422,
   * as for any route, rather than being ignored. Undefined: the route takes one.
   */
  readonly takesBody?: boolean
  /**
   * A project-wide route (http/api/Middleware.ts `UnpinnedOnly`): a user-pinned key's request is
   * passed on unread, whatever its body, for the API's 403.
   */
  readonly unpinnedOnly?: boolean
  /**
   * A route whose credential is in its path and checked by its own handler (ingest): every bad
   * credential must get the same 404 whatever the body, so the edge leaves the body's content
   * (what the event log cannot keep) for the handler to judge after the credential.
   */
  readonly ownCredential?: boolean
  /** Takes its token from the execute bucket (`POST /v1/execute`), not the standard one. */
  readonly executeBucket?: boolean
  /**
   * What its 404 says for an id the router cannot take (too long, a bad escape), where the route
   * answers every id it cannot find identically (staged files, interface.md). Undefined: a
   * general message.
   */
  readonly notFoundMessage?: string | undefined
}

export interface EdgeOptions {
  readonly routes: ReadonlyArray<Route>
  /**
   * Checks the request's key on its headers for the paths that need one, before any body byte
   * is read (Gate.ts); the verdict reaches the API as `RequestMeta.verifiedKey`.
   */
  readonly authenticate: (path: string) => boolean
  readonly gate: Gate
  /**
   * Paths served whole by another handler (the MCP gateway), which does its own checks. It is
   * given the request's id, which the request's log line carries, to answer with; the edge gives
   * the answer that id when the handler did not.
   */
  readonly mounts: ReadonlyMap<
    string,
    (request: HttpServerRequest.HttpServerRequest, requestId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, EdgeFailure>
  >
  /** The body ceiling in bytes for a request; the default applies to JSON routes. */
  readonly bodyLimit: (method: string, path: string) => number
  /**
   * Static files served beside the API under a path prefix (the dashboard, Dashboard.ts):
   * answered by `serve` before the route table, the key check and the JSON body rules; the edge
   * adds only the request id header (`serve` gets the id for the envelope of a refusal).
   */
  readonly staticFiles?: {
    readonly matches: (path: string) => boolean
    readonly serve: (request: HttpServerRequest.HttpServerRequest, path: string, requestId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  }
  /**
   * True once the process is stopping (http/server/Drain.ts): every answer then carries
   * `Connection: close`, so a keep-alive client opens no further request on a closing server.
   */
  readonly closing?: () => boolean
  /**
   * Whether answers wait for the end of the event loop's turn to leave together (EndOfTurn.ts);
   * on unless SERVICE_HTTP_END_OF_TURN says otherwise (a benchmark compares both).
   */
  readonly endOfTurn?: boolean
  /** Counts the requests being answered (Drain.ts waits for them when the process stops). */
  readonly inFlight?: InFlight
  /**
   * The project's rate limit (infra/access/Throttle.ts), taken by a request the edge refuses after its key
   * was verified: such a refusal counts like any authenticated request, carries the `RateLimit-*`
   * headers, and is 429 instead when no token is left.
   */
  readonly throttle?: (projectId: string, execute: boolean) => Effect.Effect<Decision>
}

interface CompiledRoute {
  /** The route's template, as the request log names it. */
  readonly path: string
  readonly pattern: RegExp
  readonly methods: Set<string>
  /** Its methods that take no body. */
  readonly bodiless: Set<string>
  /** Its methods that refuse user-pinned keys. */
  readonly unpinnedOnly: Set<string>
  /** Whether its handler checks its own credential before judging the body (`Route.ownCredential`). */
  readonly ownCredential: boolean
  /** Its methods that take from the execute bucket. */
  readonly executeBucket: Set<string>
  readonly notFoundMessage: string | undefined
}

const compile = (routes: ReadonlyArray<Route>): ReadonlyArray<CompiledRoute> => {
  const byPath = new Map<string, CompiledRoute>()
  for (const route of routes) {
    const source = "^" + route.path.split("/").map((part) =>
      part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    ).join("/") + "$"
    const entry = byPath.get(source) ??
      {
        path: route.path,
        pattern: new RegExp(source),
        methods: new Set<string>(),
        bodiless: new Set<string>(),
        unpinnedOnly: new Set<string>(),
        ownCredential: route.ownCredential === true,
        executeBucket: new Set<string>(),
        notFoundMessage: route.notFoundMessage
      }
    entry.methods.add(route.method.toUpperCase())
    if (route.takesBody === false) entry.bodiless.add(route.method.toUpperCase())
    if (route.unpinnedOnly === true) entry.unpinnedOnly.add(route.method.toUpperCase())
    if (route.executeBucket === true) entry.executeBucket.add(route.method.toUpperCase())
    byPath.set(source, entry)
  }
  return [...byPath.values()]
}

/**
 * The refusal of a body sent to a route that takes none: none for an empty body or `{}`; 400
 * for text that is not JSON, 422 for anything else (a field, an array, a number).
 */
const unwantedBody = (text: string): EdgeFailure | undefined => {
  if (text.trim() === "") return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return malformedBody()
  }
  const fields = typeof value === "object" && value !== null && !Array.isArray(value) ? Object.keys(value) : undefined
  if (fields?.length === 0) return undefined
  const what = fields === undefined ? "a body other than {}" : `an unknown field: ${JSON.stringify(fields[0])}`
  return new EdgeFailure(422, normalized("invalid_input", `This route takes no request body; it was sent ${what}.`))
}

const unstorableBody = (reason: Unstorable) =>
  new EdgeFailure(422, normalized("invalid_input", `The request body ${unstorableMessage[reason]}.`))

export const makeEdge = (options: EdgeOptions) => {
  const routes = compile(options.routes)
  const scan = (path: string): CompiledRoute | undefined => {
    for (const route of routes) if (route.pattern.test(path)) return route
    return undefined
  }
  // A path without parameters (`/v1/me`, `/v1/execute`) is found by one lookup, where the scan
  // would find that same route first. A trailing slash makes another path, which no route has
  // (decisions.md section 2: unknown routes are 404).
  const exact = new Map<string, CompiledRoute>()
  for (const route of routes) {
    if (!/[:*]/.test(route.path) && scan(route.path) === route) exact.set(route.path, route)
  }
  const matching = (path: string): CompiledRoute | undefined => exact.get(path) ?? scan(path)
  const closing = options.closing ?? (() => false)
  const batched = options.endOfTurn ?? true
  const inFlight = options.inFlight ?? { count: 0, started: 0 }

  /**
   * One request's answer. Written as plain functions that return effects, not as one generator:
   * a request that needs no store, clock or body (most reads with a known key) passes the edge
   * without a single suspension of its own: under load that took about a tenth off the service's
   * CPU per request (docs/performance.md, 2026-11-27).
   */
  const answer = <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
    request: HttpServerRequest.HttpServerRequest,
    requestId: string,
    trace: RequestTrace
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> => {
    const path = request.url.split("?", 1)[0] ?? "/"
    const meta: RequestMeta = { id: requestId, answerHeaders: undefined }
    // Answers are per key, and some carry a secret once (a signing secret, an ingest URL): no
    // cache on the way may keep one. What sets its own caching (the dashboard, the docs) keeps it.
    const respond = (response: HttpServerResponse.HttpServerResponse) => {
      const headers: Record<string, string> = meta.answerHeaders === undefined ? {} : { ...meta.answerHeaders }
      headers["request-id"] = requestId
      if (response.headers["cache-control"] === undefined) headers["cache-control"] = "no-store"
      if (closing()) headers.connection = "close"
      return Response.setHeaders(response, headers)
    }
    const refuse = (failure: EdgeFailure) => respond(envelopeResponse(requestId, failure.status, failure.error, failure.headers))
    // Node lets a request without Host through (requireHostHeader off, Server.ts), and keeps the
    // first of two Host lines, so that such a request's 400 carries the envelope and Request-Id
    // like every other answer (headerProblem).
    const badHeader = headerProblem(request)
    if (badHeader !== undefined) return Effect.succeed(refuse(badHeader))
    if (options.staticFiles?.matches(path) === true) {
      trace.route = "/dashboard/*"
      return Effect.map(options.staticFiles.serve(request, path, requestId), respond)
    }
    const contentLength = request.headers["content-length"]
    const chunked = request.headers["transfer-encoding"] !== undefined
    const hasBody = chunked || (contentLength !== undefined && contentLength !== "0")
    // A refusal before the body is read closes the connection: its body is never wanted.
    const refuseUnread = (failure: EdgeFailure) =>
      refuse(hasBody ? new EdgeFailure(failure.status, failure.error, { ...failure.headers, connection: "close" }) : failure)

    const mounted = options.mounts.get(path)
    if (mounted !== undefined) {
      trace.route = path
      return mounted(request, requestId).pipe(
        Effect.map((response) => (response.headers["request-id"] === undefined ? respond(response) : response)),
        Effect.catchCause((cause) => {
          // Interrupted only: no failure in it (the client went away).
          if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
          const refusal = cause.reasons.find(Cause.isFailReason)?.error
          // Anything else (a defect) is answered as the API's own are, logged, with the envelope.
          return refusal !== undefined ? Effect.succeed(refuse(refusal)) : Effect.map(causeResponse(requestId, cause), respond)
        })
      )
    }
    /**
     * The request's token, once per request (an authenticated request takes one, decisions.md
     * section 2): the 429 when none is left, else undefined. The API's rate limit then reads the
     * decision from `meta` instead of taking another. A limiter that meets a failing store gives
     * the refusal the API gives its own failures (503 while Postgres is away), rather than a
     * defect that would leave the request without an envelope.
     */
    const takeRequestToken = (execute: boolean): Effect.Effect<EdgeFailure | undefined> => {
      const principal = meta.verifiedKey
      if (principal === undefined || options.throttle === undefined || meta.tokenTaken !== undefined) return Effect.succeed(undefined)
      return Effect.matchCauseEffect(options.throttle(principal.projectId, execute), {
        onFailure: (cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : causeFailure(requestId, cause),
        onSuccess: (decision) => {
          meta.answerHeaders = { ...meta.answerHeaders, ...rateHeaders(decision) }
          meta.tokenTaken = decision
          return Effect.succeed(
            decision.allowed
              ? undefined
              : new EdgeFailure(429, rateLimitedError(decision, execute), { "retry-after": String(decision.retryAfter ?? 1) })
          )
        }
      })
    }

    /** A refusal after the key: it takes the request's token, or is 429 when none is left. */
    const takeToken = (failure: EdgeFailure, execute: boolean) => Effect.map(takeRequestToken(execute), (limited) => limited ?? failure)

    /**
     * A path or method that does not exist is refused without a key; sent with a valid one, it
     * is an authenticated request like any other and takes its token (decisions.md section 2),
     * so a bucket cannot be passed by asking for what is not there.
     */
    const refuseRoute = (failure: EdgeFailure) => {
      if (request.headers["authorization"] === undefined || !options.authenticate(path)) return Effect.succeed(refuse(failure))
      // `check` takes the quick verdict when there is one; a store that fails leaves the refusal as is.
      return Effect.flatMap(Effect.exit(options.gate.check(request)), (checked) => {
        if (checked._tag === "Failure" || checked.value._tag !== "Allowed") return Effect.succeed(refuse(failure))
        meta.verifiedKey = checked.value.principal
        return Effect.map(takeToken(failure, false), refuse)
      })
    }

    // The route table decides what exists, with or without a body: the router alone would
    // also take a path with an empty segment (`/v1/webhooks//rotate-secret`) for another one.
    const route = matching(path)
    if (route === undefined) return refuseRoute(routeNotFound())
    trace.route = route.path
    // The router answers HEAD wherever it answers GET.
    const method = request.method === "HEAD" ? "GET" : request.method
    if (!route.methods.has(method)) {
      const allowed = [...route.methods]
      return refuseRoute(methodNotAllowed(route.methods.has("GET") ? [...allowed, "HEAD"] : allowed))
    }

    /** The API's answer to `effective`, the request as the edge passes it on. */
    const run = (effective: HttpServerRequest.HttpServerRequest) => {
      const routable = routerPath(path)
      const passed = routable === path ? effective : effective.modify({ url: routable + request.url.slice(path.length) })
      return (passed === request ? app : Effect.provideService(app, HttpServerRequest.HttpServerRequest, passed)).pipe(
        Effect.provideService(CurrentRequest, meta),
        Effect.map(respond),
        Effect.catchCause((cause) => {
          // Interrupted only (the client went away, or the stop's deadline cut it): no answer
          // to make, and nothing failed; the request's line says 499 (RequestLog.ts).
          if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
          for (const reason of cause.reasons) {
            if (reason._tag === "Fail" && isRouteNotFound(reason.error)) {
              // A path the router cannot take matches no route even when its shape does (the
              // paths it could not decode are passed literally, see routerPath); with the method
              // allowed there, its id is simply not found.
              return Effect.succeed(refuse(idNotFound(route.notFoundMessage)))
            }
          }
          return Effect.map(causeResponse(requestId, cause), respond)
        })
      )
    }

    /** A refusal of the request as sent, after the key, takes its route's token. */
    const counted = (failure: EdgeFailure) => takeToken(failure, route.executeBucket.has(method))

    /** What the headers say about the body, then the body itself, and only then the API. */
    const readBody = (limit: number) => Effect.gen(function*() {
      // A provider's callback (a route with its own credential) is read as JSON whatever it is
      // labelled: there a body that is not JSON is 422 once the credential holds (decisions.md
      // section 5), never 415.
      if (!route.ownCredential) {
        const refused = bodyHeadersRefusal({
          contentType: request.headers["content-type"],
          contentEncoding: request.headers["content-encoding"],
          transferEncoding: request.headers["transfer-encoding"]
        }, NOT_JSON)
        if (refused !== undefined) return refuseUnread(yield* counted(unsupportedMediaType(refused)))
      }
      if (contentLength !== undefined && Number(contentLength) > limit) return refuseUnread(yield* counted(bodyTooLarge(limit)))
      // A project past its rate limit is refused before its body is read: a large one (an
      // upload) would otherwise be read, parsed and decoded, on the loop every project shares,
      // only to be refused.
      const limited = yield* takeRequestToken(route.executeBucket.has(method))
      if (limited !== undefined) return refuseUnread(limited)
      const body = yield* readLimited(request, limit)
      if (body === undefined) return refuse(yield* counted(bodyTooLarge(limit)))
      if (body === null) return refuse(yield* counted(malformedBody()))
      if (body instanceof EdgeFailure) return refuseUnread(yield* counted(body))
      // A large body's steps (decoding, the check, then the API's parse) each take milliseconds
      // on the loop every project shares: other requests are served between them.
      const large = body.length > LARGE_BODY
      if (large) yield* Effect.yieldNow
      const decoded = utf8Text(body)
      // A route with its own credential judges the body after it: there, bytes that are not
      // UTF-8 reach the handler as text that is no JSON.
      if (decoded === undefined && !route.ownCredential) return refuse(yield* counted(malformedBody()))
      const text = decoded ?? "\uFFFD"
      // What the event log cannot keep is refused here, before it reaches any service (a route
      // with its own credential refuses it itself, once the credential holds).
      if (large) yield* Effect.yieldNow
      const reason = route.ownCredential ? undefined : unstorableText(text)
      if (reason !== undefined) return refuse(yield* counted(unstorableBody(reason)))
      if (large) yield* Effect.yieldNow
      if (route.bodiless.has(method)) {
        const unwanted = unwantedBody(text)
        if (unwanted !== undefined) return refuse(yield* counted(unwanted))
      }
      return yield* run(withBody(request, body, text))
    })

    /** Past the key (or on a path that needs none). */
    const admitted = () => {
      // A pinned key on a project-wide route is 403 whatever it sent: the API answers it (after
      // the key's rate-limit token) without a byte of the body, and the connection then closes.
      const outOfScope = meta.verifiedKey?.userId !== undefined && route.unpinnedOnly.has(method)
      if (outOfScope && hasBody) meta.answerHeaders = { connection: "close" }
      if (hasBody && !outOfScope) return readBody(options.bodyLimit(request.method, path))
      if (request.headers["content-type"] === undefined) return run(request)
      // A request without a body has no media type to judge; the API would otherwise refuse
      // an odd declared type in plain text, after authentication had already passed.
      const { "content-type": _ignored, ...headers } = request.headers
      return run(request.modify({ headers: headers as typeof request.headers }))
    }

    const judged = (verdict: Verdict) => {
      if (verdict._tag === "Refused") return Effect.succeed(refuseUnread(verdict.failure))
      meta.verifiedKey = verdict.principal
      return admitted()
    }

    // The key first (on the headers: a request without a valid key is 401 whatever its body,
    // decisions.md section 2), then what the headers say about the body; only then is a byte
    // of the body read.
    if (!options.authenticate(path)) return admitted()
    const quick = options.gate.quick(request)
    if (quick !== undefined) return judged(quick)
    // A key lookup that meets a failing store is answered like the API's own failures (503).
    return Effect.flatMap(Effect.exit(options.gate.check(request)), (checked) =>
      checked._tag === "Failure" ? Effect.map(causeResponse(requestId, checked.cause), respond) : judged(checked.value))
  }

  return <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const requestId = newRequestId()
      const handle = logged(request, requestId, inFlight, (trace) => answer(app, request, requestId, trace))
      const behind = pipelinedBehind((request as { readonly source?: unknown }).source)
      return behind === undefined ? handle : Effect.andThen(behind, handle)
    }).pipe((answered) => (batched ? Effect.tap(answered, endOfTurn) : answered))
}

/**
 * The path as the router should see it, for the segments the route table matched. A path the
 * router cannot decode (a stray `%`, an escape that is not UTF-8) is taken literally, so it
 * still reaches authentication and then a plain 404 for its id; `;` and `#` are escaped, since
 * the router would cut the path there (as some servers do for `;jsessionid=`), while in a path
 * they are part of their segment (RFC 3986 section 3.3).
 */
const routerPath = (path: string): string => {
  const literal = decodable(path) ? path : path.replace(/%/g, "%25")
  return /[;#]/.test(literal) ? literal.replace(/;/g, "%3B").replace(/#/g, "%23") : literal
}

const decodable = (path: string): boolean => {
  // Only an escape can fail to decode; most paths have none.
  if (!path.includes("%")) return true
  try {
    decodeURIComponent(path)
    return true
  } catch {
    return false
  }
}

const isRouteNotFound = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "reason" in error &&
  (error as { reason: { _tag?: string } }).reason?._tag === "RouteNotFound"

/**
 * Requests Node's parser rejects (an unknown method, a malformed request line or header, headers
 * past the size limit) never reach the app; they still get an envelope and a request id
 * instead of Node's bare 400.
 */
/** `uri-host [ ":" port ]` (RFC 9110 section 7.2): an IP literal (IPvFuture too) or a reg-name, no user part. */
const HOST_VALUE = /^(?:\[[0-9A-Za-z:.%\-_~!$&'()*+,;=]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/

const headerFailure = (message: string) => new EdgeFailure(400, normalized("invalid_input", message), { connection: "close" })

/**
 * Request headers that must come once (the `Display` names), each with its bit. Node keeps the
 * first of two Host or Authorization lines and joins two of the others with ", ", so a second
 * line would be silently dropped or merged into a value the client never sent.
 */
const SINGLETONS: ReadonlyMap<string, { readonly bit: number; readonly failure: EdgeFailure }> = new Map(
  ["Host", "Authorization", "Idempotency-Key", "X-Service-User-Id"].map((display, i) => [
    display.toLowerCase(),
    { bit: 1 << i, failure: headerFailure(`A request must carry one ${display} header, not several.`) }
  ])
)
const SINGLETON_LENGTHS = new Set([...SINGLETONS.keys()].map((name) => name.length))

/**
 * RFC 9112 section 3.2: a server answers 400 to an HTTP/1.1 request without Host, and to any
 * request with more than one Host line or a Host that is not a host; RFC 9110 section 5.3: a
 * header that is not a list must not appear twice. The raw header lines are read, since Node keeps
 * one Host and Effect fills one in from an absolute-form target.
 */
const headerProblem = (request: HttpServerRequest.HttpServerRequest): EdgeFailure | undefined => {
  const source = (request as { readonly source?: unknown }).source
  if (!(source instanceof IncomingMessage)) return undefined
  // Node's HTTP/1 parser takes `HTTP/2.0` or `HTTP/0.9` in a request line, and answers in 1.1.
  if (source.httpVersionMajor !== 1) return VERSION_NOT_SUPPORTED
  const raw = source.rawHeaders
  let seen = 0
  let host: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!
    if (!SINGLETON_LENGTHS.has(name.length)) continue
    const singleton = SINGLETONS.get(name.toLowerCase())
    if (singleton === undefined) continue
    if ((seen & singleton.bit) !== 0) return singleton.failure
    seen |= singleton.bit
    if (singleton.bit === 1) host = raw[i + 1]!
  }
  if (host === undefined) return source.httpVersionMinor === 0 ? undefined : MISSING_HOST
  return HOST_VALUE.test(host) ? undefined : INVALID_HOST
}

const VERSION_NOT_SUPPORTED = new EdgeFailure(505, normalized("invalid_input", "This server speaks HTTP/1.0 and HTTP/1.1."), { connection: "close" })
const MISSING_HOST = headerFailure("An HTTP/1.1 request must carry a Host header.")
const INVALID_HOST = headerFailure("The Host header must be a host name or address, with an optional port.")

export const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  // As Node's own handler: no answer over a response already on its way (a pipelined request).
  const inFlight = (socket as Duplex & { readonly _httpMessage?: { readonly headersSent?: boolean; readonly req?: unknown; shouldKeepAlive?: boolean } | null })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  const [status, reason, failure] = error.code === "HPE_HEADER_OVERFLOW"
    ? [431, "Request Header Fields Too Large", normalized("invalid_input", "The request headers are too large.")]
    : error.code === "HPE_CHUNK_EXTENSIONS_OVERFLOW"
    ? [413, "Payload Too Large", normalized("invalid_input", "The chunk extensions are too large.")]
    : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? [408, "Request Timeout", requestTimeout().error]
    : [400, "Bad Request", normalized("invalid_input", "The request is not valid HTTP.")]
  const pending = inFlight?.req instanceof IncomingMessage ? inFlight.req : undefined
  if (inFlight != null && pending !== undefined) {
    // The fault is in bytes after a whole request (pipelined): that request gets its own answer,
    // and the connection closes after it.
    if (pending.complete) {
      inFlight.shouldKeepAlive = false
      return
    }
    // A request whose body is being read answers the fault itself, under its own id (and logs it).
    if (endBody(pending, new EdgeFailure(status, failure, { connection: "close" }))) return
  }
  answerRaw(socket, status, reason, failure)
}

/** An answer written on the socket itself, with the envelope and a request id, closing it. */
const answerRaw = (socket: Duplex, status: number, reason: string, failure: ReturnType<typeof normalized>): void => {
  const requestId = newRequestId()
  const body = JSON.stringify({ error: failure, requestId })
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `request-id: ${requestId}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy()
  )
}

/**
 * A CONNECT, which Node hands to its own event and otherwise closes without a word: the service
 * is no proxy, and says so like any refusal (RFC 9110 section 15.6.2: 501 for a method the
 * server does not support).
 */
export const answerConnect = (_request: IncomingMessage, socket: Duplex): void => {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  answerRaw(socket, 501, "Not Implemented", normalized("not_supported", "This service is not a proxy: CONNECT is not served."))
}
