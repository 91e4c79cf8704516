/**
 * What the provider adapters share: typed re-decoding of an already validated input, reading
 * credentials, parsing provider JSON, Retry-After, and the one mapping from outbound transport
 * failures to normalized errors.
 */
import { Effect, Option, Redacted, Schema } from "effect"
import { decodeClosed } from "../../domain/catalog/index.ts"
import { InvalidInput, MAX_RETRY_AFTER_SECONDS, ProviderError, ProviderUnavailable, Timeout } from "../../domain/Errors.ts"
import type { OutboundHttpError } from "../outbound/OutboundHttp.ts"
import type { AdapterContext } from "./Adapter.ts"

/** Provider calls get less than the tools' 30 s so that the adapter's own reason wins. */
export const PROVIDER_REQUEST_TIMEOUT_MS = 25_000
export const PROVIDER_MAX_BODY_BYTES = 1024 * 1024

/**
 * The executor decodes with the tool's codec before `run`; decoding again here gives the
 * adapter a typed value without a cast and keeps adapters safe if called directly.
 */
export const typedInput = <T, E>(schema: Schema.Codec<T, E>, tool: string) => decodeClosed(schema, `Invalid input for ${tool}`)

/** The first of `keys` present in the connection's credentials. */
export const credential = (
  context: AdapterContext,
  tool: string,
  keys: ReadonlyArray<string>
): Effect.Effect<string, InvalidInput> => {
  const secrets = context.credentials === undefined ? undefined : Redacted.value(context.credentials)
  for (const key of keys) {
    const value = secrets?.[key]
    if (value !== undefined && value !== "") return Effect.succeed(value)
  }
  return Effect.fail(
    new InvalidInput({ message: `${tool} needs a connection whose credentials carry ${keys.map((k) => `"${k}"`).join(" or ")}` })
  )
}

const decoder = new TextDecoder("utf-8", { fatal: false })
export const utf8 = (bytes: Uint8Array): string => decoder.decode(bytes)

/** Decodes a JSON body with `schema` (extra fields ignored); None when it is not that shape. */
export const parseJson = <T, E>(schema: Schema.Codec<T, E>, bytes: Uint8Array): Option.Option<T> =>
  Schema.decodeUnknownOption(Schema.fromJsonString(schema))(utf8(bytes))

/**
 * Retry-After in whole seconds: delta-seconds or an HTTP date relative to `nowMs`; a longer wait,
 * up to numbers past what an integer holds, is told as MAX_RETRY_AFTER_SECONDS.
 */
export const retryAfterSeconds = (header: string | undefined, nowMs: number): number | undefined => {
  if (header === undefined) return undefined
  const trimmed = header.trim()
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed), MAX_RETRY_AFTER_SECONDS)
  // Otherwise an HTTP date, whose three forms all open with the day's name (RFC 9110 5.6.7):
  // anything else ("1.5", "-5") is no known wait, not whatever date Date.parse makes of it.
  if (!/^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)/i.test(trimmed)) return undefined
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.min(Math.max(0, Math.ceil((date - nowMs) / 1000)), MAX_RETRY_AFTER_SECONDS)
}

/** Transport failures of a provider call: the provider is unreachable, or we gave up waiting. */
export const transportFailure = (provider: string) => (error: OutboundHttpError): ProviderUnavailable | Timeout | ProviderError => {
  switch (error.reason) {
    case "timeout":
      return new Timeout({ message: `${provider} did not answer in time` })
    case "tls_error":
      return new ProviderError({ message: `${provider}: ${error.message}` })
    case "address_blocked":
    case "invalid_request":
      return new ProviderError({ message: `${provider}: the configured API URL cannot be used (${error.reason})` })
    default:
      return new ProviderUnavailable({ message: `${provider} is unreachable (${error.reason})` })
  }
}

/** A short, single-line excerpt of provider text for error messages. */
export const excerpt = (text: string, max = 200): string => {
  const line = text.replace(/\s+/g, " ").trim()
  return line.length > max ? `${line.slice(0, max)}…` : line
}
