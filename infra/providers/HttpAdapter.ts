/**
 * `http.request`: the user names the URL, so the request goes through OutboundHttp under the
 * configured address policy (never widened). An upstream 5xx is `provider_unavailable` and a 429
 * `rate_limited` (the spec's Errors table); any other status (100-599) is the successful result.
 */
import { Clock, Effect } from "effect"
import { cutToJsonLength, MAX_RESPONSE_BODY_BYTES, RequestInput } from "../../domain/catalog/Http.ts"
import { MAX_OUTPUT_CHARS } from "../../domain/Storable.ts"
import { InvalidInput, ProviderError, ProviderUnavailable, RateLimited, Timeout } from "../../domain/Errors.ts"
import type { OutboundHttp, OutboundHttpError } from "../outbound/OutboundHttp.ts"
import type { ToolAdapter } from "./Adapter.ts"
import { PROVIDER_REQUEST_TIMEOUT_MS, retryAfterSeconds, typedInput } from "./Support.ts"

const decode = typedInput(RequestInput, "http.request")

// Framing and routing headers belong to the client; letting callers set them would allow
// request smuggling or mismatched bodies.
const MANAGED = new Set(["host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "expect"])
const isManaged = (name: string): boolean => {
  const lower = name.toLowerCase()
  return MANAGED.has(lower) || lower.startsWith("proxy-")
}

const refusal = (error: OutboundHttpError): InvalidInput | ProviderError | ProviderUnavailable | Timeout => {
  switch (error.reason) {
    case "address_blocked":
      return new InvalidInput({ message: "http.request: the URL's host is not a public address, which is not allowed" })
    case "invalid_request":
      return new InvalidInput({ message: "http.request: the request could not be sent as given" })
    case "timeout":
      return new Timeout({ message: "http.request: the server did not answer in time" })
    case "tls_error":
      return new ProviderError({ message: `http.request: ${error.message}` })
    default:
      return new ProviderUnavailable({ message: `http.request: ${error.message} (${error.reason})` })
  }
}

/** The `charset` a Content-Type names, when it names one. */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i

/**
 * A decoder for the charset the answer's Content-Type names (any label the WHATWG Encoding
 * standard knows: ISO-8859-1, windows-1252, Shift_JIS, UTF-16...), or UTF-8 when it names none or
 * one no decoder knows. Bytes the charset cannot read become U+FFFD.
 */
const decoderFor = (contentType: string | undefined): InstanceType<typeof TextDecoder> => {
  const label = contentType === undefined ? undefined : CHARSET.exec(contentType)?.[1]
  if (label !== undefined) {
    try {
      return new TextDecoder(label)
    } catch {
      // An unknown label: read as UTF-8, the web's default.
    }
  }
  return new TextDecoder()
}

export const makeHttpAdapter = (http: OutboundHttp["Service"]): ToolAdapter => ({
  tool: "http.request",
  run: Effect.fnUntraced(function*(input) {
    const request = yield* decode(input)
    const headers = request.headers ?? {}
    const managed = Object.keys(headers).find(isManaged)
    if (managed !== undefined) {
      return yield* new InvalidInput({ message: `http.request: the header "${managed}" is set by the client and cannot be given` })
    }
    if (request.body !== undefined && (request.method === "GET" || request.method === "HEAD")) {
      return yield* new InvalidInput({ message: `http.request: a ${request.method} request cannot have a body` })
    }
    const response = yield* http.request({
      method: request.method,
      url: request.url,
      headers,
      body: request.body,
      timeoutMs: PROVIDER_REQUEST_TIMEOUT_MS,
      maxBodyBytes: MAX_RESPONSE_BODY_BYTES
    }).pipe(Effect.mapError(refusal))
    // HTTP statuses are 100-599 (RFC 9110 15); Node's parser takes any three digits. A status past
    // 599 is no answer the tool's output schema describes, so it is the server's fault.
    if (response.status > 599) {
      return yield* new ProviderError({ message: `http.request: the server answered with status ${response.status}, which is not an HTTP status (100-599)` })
    }
    // The spec's Errors table: an upstream 5xx is provider_unavailable, a 429 rate_limited with
    // the retryAfter it gave. Any other status is the answer the tool returns.
    if (response.status === 429) {
      const retryAfter = retryAfterSeconds(response.headers["retry-after"], yield* Clock.currentTimeMillis)
      const message = "http.request: the server answered HTTP 429 (rate limited)"
      return yield* new RateLimited(retryAfter === undefined ? { message } : { message, retryAfter })
    }
    if (response.status >= 500) {
      return yield* new ProviderUnavailable({ message: `http.request: the server answered HTTP ${response.status}` })
    }
    // A body cut at its byte cap may end inside a character: that part is dropped, not replaced.
    // The output as a whole must fit the execution's cap (MAX_OUTPUT_CHARS of JSON), so the body
    // gets the room the status and headers leave.
    const decoder = decoderFor(response.headers["content-type"])
    const text = response.bodyTruncated ? decoder.decode(response.body, { stream: true }) : decoder.decode(response.body)
    const rest = { status: response.status, headers: response.headers, body: "", bodyTruncated: true }
    const body = cutToJsonLength(text, MAX_OUTPUT_CHARS - JSON.stringify(rest).length)
    return { ...rest, body, bodyTruncated: response.bodyTruncated || body.length < text.length }
  })
})
