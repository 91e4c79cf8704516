/**
 * The outermost layer of every request, before routing: a request id, the body rules (a JSON
 * content type, and a per-route byte ceiling enforced while the body streams in, before any
 * parsing), unknown routes (404) and wrong methods (405), and the envelope for anything that
 * escapes the API's own middleware. Every response leaves with a `Request-Id` header.
 */
import { Effect, Stream } from "effect"
import { IncomingMessage } from "node:http"
import type { Duplex } from "node:stream"
import { normalized } from "../../domain/Errors.ts"
import { unstorableMessage, type Unstorable, unstorableText } from "../../domain/Storable.ts"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpServerResponse as Response } from "effect/http"
import { newRequestId } from "../../infra/Ids.ts"
import { CurrentRequest, type RequestMeta } from "../api/Caller.ts"
import { endOfTurn } from "./EndOfTurn.ts"
import type { Verdict } from "./Gate.ts"
import {
  bodyTooLarge,
  causeResponse,
  EdgeFailure,
  envelopeResponse,
  malformedBody,
  methodNotAllowed,
  routeNotFound,
  unsupportedMediaType
} from "./Envelope.ts"

export interface Route {
  readonly method: string
  readonly path: string
}

export interface EdgeOptions {
  readonly routes: ReadonlyArray<Route>
  /**
   * Checks the request's key on its headers for the paths that need one, before any body byte
   * is read (Gate.ts); the verdict reaches the API as `RequestMeta.verifiedKey`.
   */
  readonly authenticate: (path: string) => boolean
  readonly gate: (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<Verdict>
  /**
   * Paths served whole by another handler (the MCP gateway), which does its own checks: the edge
   * only gives the answer a request id when the handler did not.
   */
  readonly mounts: ReadonlyMap<string, (request: HttpServerRequest.HttpServerRequest) => Effect.Effect<HttpServerResponse.HttpServerResponse, EdgeFailure>>
  /** The body ceiling in bytes for a request; the default applies to JSON routes. */
  readonly bodyLimit: (method: string, path: string) => number
  /**
   * Static files served beside the API under a path prefix (the dashboard, Dashboard.ts):
   * answered by `serve` before the route table, the key check and the JSON body rules; the edge
   * adds only the request id.
   */
  readonly staticFiles?: {
    readonly matches: (path: string) => boolean
    readonly serve: (request: HttpServerRequest.HttpServerRequest, path: string) => Effect.Effect<HttpServerResponse.HttpServerResponse>
  }
}

interface CompiledRoute {
  readonly pattern: RegExp
  readonly methods: Set<string>
}

const compile = (routes: ReadonlyArray<Route>): ReadonlyArray<CompiledRoute> => {
  const byPath = new Map<string, CompiledRoute>()
  for (const route of routes) {
    const source = "^" + route.path.split("/").map((part) =>
      part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    ).join("/") + "/?$"
    const entry = byPath.get(source) ?? { pattern: new RegExp(source), methods: new Set<string>() }
    entry.methods.add(route.method.toUpperCase())
    byPath.set(source, entry)
  }
  return [...byPath.values()]
}

/** The API decodes `application/json` only (parameters aside); it refuses `+json` types in plain text. */
const isJson = (header: string | undefined): boolean =>
  header !== undefined && (header.split(";", 1)[0] ?? "").trim().toLowerCase() === "application/json"

/**
 * Reads at most `limit` bytes: the body, `undefined` when it is longer, `null` when the request
 * broke off.
 */
const readLimited = (request: HttpServerRequest.HttpServerRequest, limit: number): Effect.Effect<Buffer | undefined | null> => {
  const source = (request as { readonly source?: unknown }).source
  return source instanceof IncomingMessage
    ? Effect.andThen(
      // A client that sent `Expect: 100-continue` waits for this before it sends the body.
      Effect.sync(() => (request as { readonly writeContinue?: () => void }).writeContinue?.()),
      readIncoming(source, limit)
    )
    : readStream(request, limit).pipe(Effect.orElseSucceed(() => null))
}

/** Node's request read directly (the common case): no stream adapter per request. */
const readIncoming = (message: IncomingMessage, limit: number) =>
  Effect.callback<Buffer | undefined | null>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("close", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size <= limit) return void chunks.push(chunk)
      cleanup()
      message.pause()
      resume(Effect.succeed(undefined))
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks, size)))
    }
    const onError = () => {
      cleanup()
      resume(Effect.succeed(null))
    }
    message.on("data", onData)
    message.on("end", onEnd)
    message.on("error", onError)
    // A connection that closes before the end of the body: nothing more is coming.
    message.on("close", onError)
    return Effect.sync(cleanup)
  })

const readStream = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    return request.stream.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          size += chunk.length
          if (size > limit) return false
          chunks.push(chunk)
          return true
        })
      ),
      Effect.map(() => (size > limit ? undefined : Buffer.concat(chunks, size)))
    )
  })

const unstorableBody = (reason: Unstorable) =>
  new EdgeFailure(422, normalized("invalid_input", `The request body ${unstorableMessage[reason]}.`))

const BODY = Symbol("app/http/Edge/body")

interface Buffered {
  readonly [BODY]: { readonly bytes: Uint8Array; readonly text: string }
}

/** One decoder for every request: `decode` without `stream` keeps no state between calls. */
const utf8 = new TextDecoder()

const textOf = (self: Buffered) => self[BODY].text

/**
 * What a request with an already-read body answers instead of reading its stream. The text is
 * decoded once, when the edge checks it (domain/Storable.ts); the ArrayBuffer copy is made on
 * first use only: a staged file's body is tens of megabytes, and the API reads only the text.
 */
const bodyAccessors: PropertyDescriptorMap = {
  arrayBuffer: {
    get(this: Buffered) {
      const bytes = this[BODY].bytes
      return Effect.sync(() => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
    }
  },
  text: {
    get(this: Buffered) {
      return Effect.sync(() => textOf(this))
    }
  },
  json: {
    get(this: Buffered) {
      return Effect.try({
        try: () => {
          const value = textOf(this)
          return value === "" ? null : JSON.parse(value)
        },
        catch: () => malformedBody()
      })
    }
  },
  stream: {
    get(this: Buffered) {
      return Stream.make(this[BODY].bytes)
    }
  }
}

/** One prototype per request class, so every wrapped request has the same shape. */
const bufferedPrototypes = new WeakMap<object, object>()

/** The same request (its own fields copied), with a body that has already been read. */
const withBody = (request: HttpServerRequest.HttpServerRequest, body: Uint8Array, text: string): HttpServerRequest.HttpServerRequest => {
  const base = Object.getPrototypeOf(request) as object
  let prototype = bufferedPrototypes.get(base)
  if (prototype === undefined) {
    prototype = Object.create(base, bodyAccessors) as object
    bufferedPrototypes.set(base, prototype)
  }
  const wrapped = Object.assign(Object.create(prototype) as object, request)
  return Object.assign(wrapped, { [BODY]: { bytes: body, text } }) as HttpServerRequest.HttpServerRequest
}

export const makeEdge = (options: EdgeOptions) => {
  const routes = compile(options.routes)
  const allowedMethods = (path: string): ReadonlyArray<string> | undefined => {
    for (const route of routes) if (route.pattern.test(path)) return [...route.methods]
    return undefined
  }

  return <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.gen(function*() {
      const requestId = newRequestId()
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = request.url.split("?", 1)[0] ?? "/"
      const meta: RequestMeta = { id: requestId, answerHeaders: undefined }
      const respond = (response: HttpServerResponse.HttpServerResponse) =>
        meta.answerHeaders === undefined
          ? Response.setHeader(response, "request-id", requestId)
          : Response.setHeaders(response, { ...meta.answerHeaders, "request-id": requestId })
      const refuse = (failure: EdgeFailure) => respond(envelopeResponse(requestId, failure.status, failure.error, failure.headers))
      if (options.staticFiles?.matches(path) === true) return respond(yield* options.staticFiles.serve(request, path))
      // A refusal before the body is read closes the connection: its body is never wanted.
      const refuseUnread = (failure: EdgeFailure) =>
        refuse(hasBody ? new EdgeFailure(failure.status, failure.error, { ...failure.headers, connection: "close" }) : failure)

      const contentLength = request.headers["content-length"]
      const chunked = request.headers["transfer-encoding"] !== undefined
      const hasBody = chunked || (contentLength !== undefined && contentLength !== "0")
      const mounted = options.mounts.get(path)
      if (mounted !== undefined) {
        return yield* mounted(request).pipe(
          Effect.map((response) => (response.headers["request-id"] === undefined ? respond(response) : response)),
          Effect.catch((failure) => Effect.succeed(refuse(failure)))
        )
      }
      // The route table decides what exists, with or without a body: the router alone would
      // also take a path with an empty segment (`/v1/webhooks//rotate-secret`) for another one.
      const allowed = allowedMethods(path)
      if (allowed === undefined) return refuse(routeNotFound())
      // The router answers HEAD wherever it answers GET.
      const method = request.method === "HEAD" ? "GET" : request.method
      if (!allowed.includes(method)) return refuse(methodNotAllowed(allowed))
      const limit = hasBody ? options.bodyLimit(request.method, path) : 0
      // What the headers alone say about the body is answered first; then the key (on the
      // headers too); only then is a byte of the body read.
      if (hasBody) {
        if (!isJson(request.headers["content-type"])) return refuseUnread(unsupportedMediaType())
        if (contentLength !== undefined && Number(contentLength) > limit) return refuseUnread(bodyTooLarge(limit))
      }
      if (options.authenticate(path)) {
        const verdict = yield* options.gate(request)
        if (verdict._tag === "Refused") return refuseUnread(verdict.failure)
        meta.verifiedKey = verdict.principal
      }
      let effective = request
      if (hasBody) {
        const body = yield* readLimited(request, limit)
        if (body === undefined) return refuse(bodyTooLarge(limit))
        if (body === null) return refuse(malformedBody())
        const text = utf8.decode(body)
        // What the event log cannot keep is refused here, before it reaches any service.
        const reason = unstorableText(text)
        if (reason !== undefined) return refuse(unstorableBody(reason))
        effective = withBody(request, body, text)
      } else if (request.headers["content-type"] !== undefined) {
        // A request without a body has no media type to judge; the API would otherwise refuse
        // an odd declared type in plain text, after authentication had already passed.
        const { "content-type": _ignored, ...headers } = request.headers
        effective = request.modify({ headers: headers as typeof request.headers })
      }

      const routable = routerPath(path)
      if (routable !== path) effective = effective.modify({ url: routable + request.url.slice(path.length) })

      return yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, effective),
        Effect.provideService(CurrentRequest, meta),
        Effect.map(respond),
        Effect.catchCause((cause) => {
          for (const reason of cause.reasons) {
            if (reason._tag === "Fail" && isRouteNotFound(reason.error)) {
              // A path the router cannot decode (a bad percent escape) matches no route even
              // when its shape does; with the method allowed there, it is simply not found.
              return Effect.succeed(refuse(routeNotFound()))
            }
          }
          return Effect.map(causeResponse(requestId, cause), respond)
        })
      )
    }).pipe(Effect.tap(endOfTurn))
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
export const answerClientError = (error: Error & { readonly code?: string }, socket: Duplex): void => {
  // As Node's own handler: no answer over a response already on its way (a pipelined request).
  const inFlight = (socket as Duplex & { readonly _httpMessage?: { readonly headersSent?: boolean } | null })._httpMessage
  if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
    socket.destroy()
    return
  }
  const requestId = newRequestId()
  const [status, reason, failure] = error.code === "HPE_HEADER_OVERFLOW"
    ? [431, "Request Header Fields Too Large", normalized("invalid_input", "The request headers are too large.")]
    : error.code === "HPE_CHUNK_EXTENSIONS_OVERFLOW"
    ? [413, "Payload Too Large", normalized("invalid_input", "The chunk extensions are too large.")]
    : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? [408, "Request Timeout", normalized("timeout", "The request was not received in time.")]
    : [400, "Bad Request", normalized("invalid_input", "The request is not valid HTTP.")]
  const body = JSON.stringify({ error: failure, requestId })
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
      `request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy()
  )
}
