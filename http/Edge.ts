/**
 * The outermost layer of every request, before routing: a request id, the body rules (a JSON
 * content type, and a per-route byte ceiling enforced while the body streams in, before any
 * parsing), unknown routes (404) and wrong methods (405), and the envelope for anything that
 * escapes the API's own middleware. Every response leaves with a `Request-Id` header.
 */
import { Effect, Stream } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpServerResponse as Response } from "effect/http"
import { newRequestId } from "../infra/Ids.ts"
import { RequestId } from "./Caller.ts"
import {
  bodyTooLarge,
  causeResponse,
  type EdgeFailure,
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
  /** The body ceiling in bytes for a request; the default applies to JSON routes. */
  readonly bodyLimit: (method: string, path: string) => number
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

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;.*)?$/i

/** Reads at most `limit` bytes; `undefined` when the body is longer. */
const readLimited = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
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

/**
 * The same request, with a body that has already been read. The text and the ArrayBuffer copy
 * are made on first use only: a staged file's body is tens of megabytes, and the API reads
 * only the text.
 */
const withBody = (request: HttpServerRequest.HttpServerRequest, body: Uint8Array): HttpServerRequest.HttpServerRequest => {
  let text: string | undefined
  const getText = () => (text ??= new TextDecoder().decode(body))
  const wrapped = Object.create(request) as HttpServerRequest.HttpServerRequest
  Object.defineProperties(wrapped, {
    arrayBuffer: {
      get: () => Effect.sync(() => body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer)
    },
    text: { get: () => Effect.sync(getText) },
    json: {
      get: () =>
        Effect.try({
          try: () => {
            const value = getText()
            return value === "" ? null : JSON.parse(value)
          },
          catch: () => malformedBody()
        })
    },
    stream: { get: () => Stream.make(body) }
  })
  return wrapped
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
      const respond = (response: HttpServerResponse.HttpServerResponse) => Response.setHeader(response, "request-id", requestId)
      const refuse = (failure: EdgeFailure) => respond(envelopeResponse(requestId, failure.status, failure.error, failure.headers))

      const contentLength = request.headers["content-length"]
      const chunked = request.headers["transfer-encoding"] !== undefined
      const hasBody = chunked || (contentLength !== undefined && contentLength !== "0")
      let effective = request
      if (hasBody) {
        const allowed = allowedMethods(path)
        if (allowed === undefined) return refuse(routeNotFound())
        if (!allowed.includes(request.method)) return refuse(methodNotAllowed(allowed))
        if (!JSON_TYPE.test(request.headers["content-type"] ?? "")) return refuse(unsupportedMediaType())
        const limit = options.bodyLimit(request.method, path)
        if (contentLength !== undefined && Number(contentLength) > limit) return refuse(bodyTooLarge(limit))
        const body = yield* readLimited(request, limit).pipe(Effect.orElseSucceed(() => null))
        if (body === undefined) return refuse(bodyTooLarge(limit))
        if (body === null) return refuse(malformedBody())
        effective = withBody(request, body)
      }

      return yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, effective),
        Effect.provideService(RequestId, requestId),
        Effect.map(respond),
        Effect.catchCause((cause) => {
          for (const reason of cause.reasons) {
            if (reason._tag === "Fail" && isRouteNotFound(reason.error)) {
              const allowed = allowedMethods(path)
              return Effect.succeed(refuse(allowed === undefined ? routeNotFound() : methodNotAllowed(allowed)))
            }
          }
          return Effect.map(causeResponse(requestId, cause), respond)
        })
      )
    })
}

const isRouteNotFound = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "reason" in error &&
  (error as { reason: { _tag?: string } }).reason?._tag === "RouteNotFound"
