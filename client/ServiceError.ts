/**
 * The one error type of the client: the service's normalized error envelope
 * `{error: {code, message, retryable, retryAfter?}, requestId}` with the HTTP status. Failures
 * that never reached an envelope (network down, the `wait` deadline) use status 0.
 */
import { Data, Schema } from "effect"
import { type ErrorCode, isRetryable } from "../domain/Errors.ts"

/**
 * The service's error code: one of `ErrorCode` as this client knows the contract, or any other
 * string a newer service sends, kept as sent rather than replaced by a guess from the status.
 * (`string & {}` keeps the known codes offered by editors while admitting the rest.)
 */
export type ServiceErrorCode = ErrorCode | (string & {})

export class ServiceError extends Data.TaggedError("ServiceError")<{
  /** The HTTP status; 0 when no response carried the error (network failure, client-side timeout). */
  readonly status: number
  readonly code: ServiceErrorCode
  readonly message: string
  readonly retryable: boolean
  /** Seconds to wait before retrying, when the service said. */
  readonly retryAfter?: number
  /** The `Request-Id` of the failed request; empty when there was no response. */
  readonly requestId: string
}> {}

const Envelope = Schema.Struct({
  error: Schema.Struct({
    // Any code: one this client does not know yet is still the service's code and message.
    code: Schema.String,
    message: Schema.String,
    retryable: Schema.Boolean,
    retryAfter: Schema.optionalKey(Schema.Number)
  }),
  requestId: Schema.String
})
const decodeEnvelope = Schema.decodeUnknownOption(Envelope)

/** What an error status means when the body is not an envelope (a proxy's page, say). */
const codeForStatus = (status: number): ErrorCode =>
  status === 401 ? "auth_missing"
    : status === 403 ? "auth_insufficient_scope"
    : status === 404 ? "not_found"
    : status === 429 ? "rate_limited"
    : status === 501 ? "not_supported"
    : status === 504 ? "timeout"
    : status >= 500 ? "provider_unavailable"
    : "invalid_input"

/** Seconds from a `Retry-After` header: delta-seconds or an HTTP date. */
export const parseRetryAfter = (header: string | null, nowMs: number): number | undefined => {
  if (header === null) return undefined
  const trimmed = header.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed)
  const date = Date.parse(trimmed)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - nowMs) / 1000))
}

/** The error for a non-2xx answer: the envelope when there is one, else one made from the status. */
export const fromResponse = (status: number, body: unknown, headers: Headers, nowMs: number): ServiceError => {
  const headerRetry = parseRetryAfter(headers.get("retry-after"), nowMs)
  const requestId = headers.get("request-id") ?? ""
  const envelope = decodeEnvelope(body)
  if (envelope._tag === "Some") {
    const { error } = envelope.value
    const retryAfter = error.retryAfter ?? headerRetry
    return new ServiceError({
      status,
      code: error.code,
      message: error.message,
      retryable: error.retryable,
      ...(retryAfter !== undefined ? { retryAfter } : {}),
      requestId: envelope.value.requestId
    })
  }
  const code = codeForStatus(status)
  return new ServiceError({
    status,
    code,
    message: `HTTP ${status} without an error envelope.`,
    retryable: isRetryable(code),
    ...(headerRetry !== undefined ? { retryAfter: headerRetry } : {}),
    requestId
  })
}

/**
 * The error of a request that got no answer. The runtime's message may quote what was sent (a
 * header check quotes the Authorization value whole), so `secret`, and any bearer value, is cut
 * out of it.
 */
export const networkError = (cause: unknown, secret: string): ServiceError => {
  const said = cause instanceof Error ? cause.message : String(cause)
  return new ServiceError({
    status: 0,
    code: "provider_unavailable",
    message: `The service could not be reached: ${(secret === "" ? said : said.replaceAll(secret, "[redacted]")).replace(/(Bearer\s+)[^\s"']+/gi, "$1[redacted]")}`,
    retryable: true,
    requestId: ""
  })
}

/** The client's own deadline passed with no answer (no envelope: status 0). */
export const timedOut = (message: string): ServiceError =>
  new ServiceError({ status: 0, code: "timeout", message, retryable: true, requestId: "" })

/** A request this client cannot send as asked (an argument no URL or header can carry): never sent. */
export const unsendable = (why: string): ServiceError =>
  new ServiceError({ status: 0, code: "invalid_input", message: why, retryable: false, requestId: "" })
