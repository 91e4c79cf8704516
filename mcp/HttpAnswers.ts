/**
 * The HTTP answers of `/mcp` that are not JSON-RPC results (JSON answers, or web `Response`s).
 *
 * Two shapes, by who is answering: refusals of the service (auth, origin, rate limit, body
 * ceiling, method) carry the service's normalized envelope `{error, requestId}` like every `/v1`
 * route (decisions.md sections 2 and 7); refusals of the MCP transport (no or unknown session,
 * bad protocol version, unparsable JSON-RPC) carry a JSON-RPC error body, as MCP clients read it.
 */
import { normalized, type NormalizedError } from "../domain/Errors.ts"
import { bodyHeadersRefusal } from "../domain/MediaType.ts"

/** JSON bodies of `/mcp` are small (decisions.md section 2). */
export const BODY_LIMIT = 1024 * 1024

/**
 * What the gateway reads of a request. A web `Request` is one; the mount (http/server/McpMount.ts)
 * passes a lighter one for a plain JSON POST, with the body it has already read from Node.
 *
 * Why not always a web `Request`: building one (its `Headers`, its URL, its signal) and the
 * web `Response` of the answer cost a `tools/call` about a tenth of its CPU (bench/scenarios/mcp.ts).
 */
export interface GatewayRequest {
  readonly method: string
  readonly url: string
  readonly headers: { readonly get: (name: string) => string | null }
  readonly body: ReadableStream<Uint8Array> | null
  /** The body, when the mount has read it already. */
  readonly preread?: Uint8Array | undefined
}

/** A JSON answer of the gateway: its text is sent as it is, with `content-type: application/json`. */
export class JsonAnswer {
  readonly text: string
  readonly status: number
  /** Lower-case names; `content-type` is implied. */
  readonly headers: Record<string, string>
  constructor(text: string, status: number, headers: Record<string, string>) {
    this.text = text
    this.status = status
    this.headers = headers
  }
}

/** What the gateway answers: JSON it made itself, or a web `Response` (SSE streams, the SDK's answers, empty bodies). */
export type Answer = JsonAnswer | Response

export const isAnswer = (value: unknown): value is Answer => value instanceof JsonAnswer || value instanceof Response

/** A JSON answer. */
export const jsonResponse = (text: string, status: number, headers: Record<string, string> = {}): JsonAnswer =>
  new JsonAnswer(text, status, { ...headers })

const json = (body: unknown, status: number, headers: Record<string, string> = {}) => jsonResponse(JSON.stringify(body), status, headers)

export const envelope = (requestId: string, status: number, error: NormalizedError, headers: Record<string, string> = {}) =>
  json({ error, requestId }, status, headers)

export const unauthorized = (requestId: string, code: "auth_missing" | "auth_expired", message: string) =>
  envelope(requestId, 401, normalized(code, message), { "www-authenticate": "Bearer" })

export const forbidden = (requestId: string, message: string) =>
  envelope(requestId, 403, normalized("auth_insufficient_scope", message))

export const methodNotAllowed = (requestId: string) =>
  envelope(requestId, 405, normalized("invalid_input", "The method is not allowed on this path."), { allow: "GET, POST, DELETE" })

export const bodyTooLarge = (requestId: string) =>
  envelope(requestId, 413, normalized("invalid_input", `The request body exceeds ${BODY_LIMIT} bytes.`), { connection: "close" })

/** The first thing a body's headers get wrong, answered 415 as on /v1; undefined when they are right. */
export const bodyHeadersRefused = (requestId: string, headers: GatewayRequest["headers"]) => {
  const refused = bodyHeadersRefusal({
    contentType: headers.get("content-type"),
    contentEncoding: headers.get("content-encoding"),
    transferEncoding: headers.get("transfer-encoding")
  }, "The request body must be application/json.")
  return refused === undefined ? undefined : envelope(requestId, 415, normalized("invalid_input", refused))
}

/**
 * CORS for an allowed browser origin: what a preflight answers, and what every answer to that
 * origin exposes (the session id above all, which a browser client must read).
 */
export const corsHeaders = (origin: string): Record<string, string> => ({
  "access-control-allow-origin": origin,
  "access-control-expose-headers": "mcp-session-id, request-id, ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, www-authenticate",
  vary: "origin"
})

export const preflight = (origin: string) =>
  new Response(null, {
    status: 204,
    headers: {
      ...corsHeaders(origin),
      "access-control-allow-methods": "GET, POST, DELETE",
      "access-control-allow-headers": "authorization, content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id, x-service-user-id",
      "access-control-max-age": "600"
    }
  })

export type RpcId = string | number | null

export const rpcError = (status: number, code: number, message: string, id: RpcId = null) =>
  json({ jsonrpc: "2.0", error: { code, message }, id }, status)

export const sessionNotFound = (id: RpcId = null) => rpcError(404, -32001, "Session not found", id)

/**
 * The answer with more headers: set in place (answers made in this process have mutable headers),
 * or on a copy when a response's headers are immutable (a fetched response's).
 */
export const withHeaders = <A extends Answer>(answer: A, headers: Record<string, string>): A => {
  if (answer instanceof JsonAnswer) {
    Object.assign(answer.headers, headers)
    return answer
  }
  const response = answer as Response
  try {
    for (const name in headers) response.headers.set(name, headers[name]!)
    return answer
  } catch {
    // Immutable headers: the first `set` threw, so nothing was changed.
  }
  const merged = new Headers(response.headers)
  for (const [name, value] of Object.entries(headers)) merged.set(name, value)
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: merged }) as A
}

/**
 * The body, read up to `limit` bytes while it streams in, before any parsing: `undefined` when
 * it is longer, `null` when it broke off.
 */
export const readLimited = async (request: GatewayRequest, limit: number): Promise<Uint8Array | undefined | null> => {
  const preread = request.preread
  if (preread !== undefined) return preread.byteLength > limit ? undefined : preread
  const declared = Number(request.headers.get("content-length") ?? Number.NaN)
  if (declared > limit) return undefined
  if (request.body === null) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > limit) {
        await reader.cancel().catch(() => undefined)
        return undefined
      }
      chunks.push(value)
    }
  } catch {
    return null
  }
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return body
}

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** The body as text, or undefined when it is not valid UTF-8. */
export const decodeUtf8 = (body: Uint8Array): string | undefined => {
  try {
    return utf8.decode(body)
  } catch {
    return undefined
  }
}

/** The text as JSON, or undefined when it is not JSON. */
export const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

