/**
 * The HTTP answers of `/mcp` that are not JSON-RPC results, as web `Response`s.
 *
 * Two shapes, by who is answering: refusals of the service (auth, origin, rate limit, body
 * ceiling, method) carry the service's normalized envelope `{error, requestId}` like every `/v1`
 * route (decisions.md sections 2 and 7); refusals of the MCP transport (no or unknown session,
 * bad protocol version, unparsable JSON-RPC) carry a JSON-RPC error body, as MCP clients read it.
 */
import { normalized, type NormalizedError } from "../domain/Errors.ts"

/** JSON bodies of `/mcp` are small (decisions.md section 2). */
export const BODY_LIMIT = 1024 * 1024

/**
 * The text of the JSON responses made here, so that the mount (http/server/McpMount.ts) sends it
 * without reading the web body back; and the bodies the mount has already read from Node, so that
 * `readLimited` does not read them through a web stream.
 */
const jsonTexts = new WeakMap<Response, string>()
const prereadBodies = new WeakMap<Request, Uint8Array>()

/** A JSON answer whose text the mount can take as it is. */
export const jsonResponse = (text: string, status: number, headers: Record<string, string> = {}): Response => {
  const response = new Response(text, { status, headers: { "content-type": "application/json", ...headers } })
  jsonTexts.set(response, text)
  return response
}

/** The text of a JSON answer made by `jsonResponse`, if it is one. */
export const jsonTextOf = (response: Response): string | undefined => jsonTexts.get(response)

/** A request whose body was read already (by the mount, from Node): `readLimited` answers it. */
export const withPrereadBody = (request: Request, body: Uint8Array): Request => {
  prereadBodies.set(request, body)
  return request
}

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

export const unsupportedMediaType = (requestId: string) =>
  envelope(requestId, 415, normalized("invalid_input", "The request body must be application/json."))

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
 * The response with more headers: set in place (responses made in this process have mutable
 * headers), or on a copy when its headers are immutable (a fetched response's).
 */
export const withHeaders = (response: Response, headers: Record<string, string>): Response => {
  try {
    for (const name in headers) response.headers.set(name, headers[name]!)
    return response
  } catch {
    // Immutable headers: the first `set` threw, so nothing was changed.
  }
  const merged = new Headers(response.headers)
  for (const [name, value] of Object.entries(headers)) merged.set(name, value)
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers: merged })
}

/**
 * The body, read up to `limit` bytes while it streams in, before any parsing: `undefined` when
 * it is longer, `null` when it broke off.
 */
export const readLimited = async (request: Request, limit: number): Promise<Uint8Array | undefined | null> => {
  const preread = prereadBodies.get(request)
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

/** The body as JSON, or undefined when it is not valid UTF-8 JSON. */
export const parseJson = (body: Uint8Array): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(utf8.decode(body)) as unknown }
  } catch {
    return undefined
  }
}

/** Whether a `Content-Type` is JSON (parameters aside). */
export const isJsonContentType = (header: string | null): boolean =>
  header !== null && (header.split(";", 1)[0] ?? "").trim().toLowerCase() === "application/json"
