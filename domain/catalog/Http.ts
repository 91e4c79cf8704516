/**
 * The http toolkit: one generic request tool. Its target is user-supplied, so the adapter sends
 * it through the guarded outbound client (the webhook address guard): private, loopback,
 * link-local and metadata addresses are refused unless the operator allows private networks.
 */
import { Schema } from "effect"
import type { ToolDefinition, ToolkitManifest } from "./Catalog.ts"

/** Response bodies are returned as text up to this many bytes; the rest is not read. */
export const MAX_RESPONSE_BODY_BYTES = 1024 * 1024
export const MAX_REQUEST_BODY_CODE_POINTS = 1024 * 1024

/** How many characters `JSON.stringify` writes for the UTF-16 code unit `code` inside a string. */
const escapedLength = (code: number): number =>
  code === 0x22 || code === 0x5c || code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d
    ? 2
    : code < 0x20
    ? 6
    : 1

/**
 * The longest prefix of `text` whose JSON string form (quotes aside) takes at most `room`
 * characters, never ending inside a surrogate pair: how a response body is cut so that the
 * tool's whole output fits the execution's cap on outputs.
 */
export const cutToJsonLength = (text: string, room: number): string => {
  let used = 0
  for (let i = 0; i < text.length; i++) {
    used += escapedLength(text.charCodeAt(i))
    if (used > room) {
      const previous = text.charCodeAt(i - 1)
      return text.slice(0, i > 0 && previous >= 0xd800 && previous <= 0xdbff ? i - 1 : i)
    }
  }
  return text
}

export const HttpMethod = Schema.Literals(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
export type HttpMethod = typeof HttpMethod.Type

// Scheme matching is case-insensitive (URLs may say HTTPS://); JSON Schema patterns have no flags.
const URL_PATTERN = "^[Hh][Tt][Tt][Pp][Ss]?://"

const isHttpUrl = (value: string): boolean => {
  if (!new RegExp(URL_PATTERN).test(value)) return false
  try {
    const url = new URL(value)
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
  } catch {
    return false
  }
}

export const RequestInput = Schema.Struct({
  method: HttpMethod,
  url: Schema.String.check(Schema.makeFilter(isHttpUrl, { expected: "an absolute http(s) URL" })),
  headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  body: Schema.optionalKey(Schema.String.check(Schema.isMaxCodePoints(MAX_REQUEST_BODY_CODE_POINTS)))
})
export type RequestInput = typeof RequestInput.Type

export const request: ToolDefinition = {
  name: "http.request",
  toolkit: "http",
  description:
    "Sends one HTTP request to a public http(s) URL and returns the status, headers and body text (at most 1 MiB). " +
    "An answer of 5xx fails as provider_unavailable and a 429 as rate_limited (with its Retry-After); any other status is returned. " +
    "Redirects are not followed; private and loopback addresses are refused.",
  capability: "http",
  version: "1.1.0",
  input: RequestInput,
  inputSchema: {
    type: "object",
    properties: {
      method: { type: "string", enum: ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"] },
      url: { type: "string", format: "uri", pattern: URL_PATTERN, description: "Absolute http or https URL." },
      headers: { type: "object", additionalProperties: { type: "string" }, description: "Request headers." },
      body: { type: "string", maxLength: MAX_REQUEST_BODY_CODE_POINTS, description: "Request body, sent as UTF-8." }
    },
    required: ["method", "url"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: {
      status: { type: "integer", minimum: 100, maximum: 599 },
      headers: { type: "object", additionalProperties: { type: "string" } },
      body: {
        type: "string",
        description: "Response body decoded by the charset its Content-Type names (UTF-8 when it names none, or one not known): at most 1 MiB of it, and less where the whole output would pass 1 MiB of JSON."
      },
      bodyTruncated: { type: "boolean", description: "True when the body was cut (longer than 1 MiB, or too long for the output)." }
    },
    required: ["status", "headers", "body", "bodyTruncated"],
    additionalProperties: false
  },
  scopes: [],
  asyncByNature: false,
  pure: false,
  timeoutMs: 30_000,
  annotations: { title: "HTTP request", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }
}

export const manifest: ToolkitManifest = {
  name: "http",
  version: "1.1.0",
  description: "Generic outbound HTTP requests to public addresses.",
  authClasses: ["none"],
  limits: {},
  tools: [request],
  triggers: []
}
