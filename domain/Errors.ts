/**
 * Normalized errors: the codes of the spec's Errors section, their retryability, and the typed
 * domain errors that carry them. Each error class also carries its HTTP status (decisions.md
 * section 2) as its `httpApiStatus` annotation, the way Effect's HttpApi reads it; the HTTP edge
 * answers with that status (http/server/Envelope.ts), so the status has one source.
 */
import { Predicate, Schema } from "effect"

export const ErrorCode = Schema.Literals([
  "invalid_input",
  "auth_missing",
  "auth_expired",
  "auth_insufficient_scope",
  "not_found",
  "timeout",
  "rate_limited",
  "provider_unavailable",
  "provider_error",
  "not_supported",
  "execution_interrupted",
  "execution_cancelled"
])
export type ErrorCode = typeof ErrorCode.Type

const RETRYABLE: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "rate_limited",
  "timeout",
  "provider_unavailable",
  "execution_interrupted"
])

export const isRetryable = (code: ErrorCode): boolean => RETRYABLE.has(code)

/**
 * The longest `retryAfter` a normalized error tells, in seconds (a day, the longest window the
 * service's own quota has): a provider's longer `Retry-After` is told as this.
 */
export const MAX_RETRY_AFTER_SECONDS = 86_400

/** `{code, message, retryable, retryAfter?}`: the body of `error` in envelopes and records. */
export const NormalizedError = Schema.Struct({
  code: ErrorCode,
  message: Schema.String,
  retryable: Schema.Boolean,
  retryAfter: Schema.optionalKey(Schema.Int)
})
export type NormalizedError = typeof NormalizedError.Type

export const normalized = (code: ErrorCode, message: string, retryAfter?: number): NormalizedError =>
  retryAfter === undefined
    ? { code, message, retryable: isRetryable(code) }
    : { code, message, retryable: isRetryable(code), retryAfter: Math.max(0, Math.ceil(retryAfter)) }

/** What every typed service failure offers the edges. */
export interface ServiceFailure {
  readonly _tag: string
  readonly code: ErrorCode
  readonly message: string
  readonly retryAfter?: number | undefined
}

export const isServiceFailure = (u: unknown): u is ServiceFailure =>
  Predicate.hasProperty(u, "code") && Predicate.hasProperty(u, "_tag") && Predicate.isString(u.code) &&
  ErrorCode.literals.includes(u.code as ErrorCode)

export const toNormalized = (failure: ServiceFailure): NormalizedError =>
  normalized(failure.code, failure.message, failure.retryAfter)

const message = { message: Schema.String }

/** Malformed JSON, unknown field, schema failure, bad cursor: 422 unless the edge says otherwise (400, 413, 415). */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", message, { httpApiStatus: 422 }) {
  readonly code = "invalid_input" as const
}

/** A command that the resource's state forbids (cancel of a terminal execution): 409. */
export class StateConflict extends Schema.TaggedError<StateConflict>()("StateConflict", message, { httpApiStatus: 409 }) {
  readonly code = "invalid_input" as const
}

export class AuthMissing extends Schema.TaggedError<AuthMissing>()("AuthMissing", message, { httpApiStatus: 401 }) {
  readonly code = "auth_missing" as const
}

export class AuthExpired extends Schema.TaggedError<AuthExpired>()("AuthExpired", message, { httpApiStatus: 401 }) {
  readonly code = "auth_expired" as const
}

export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", message, { httpApiStatus: 403 }) {
  readonly code = "auth_insufficient_scope" as const
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", message, { httpApiStatus: 404 }) {
  readonly code = "not_found" as const
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String,
  retryAfter: Schema.optional(Schema.Int)
}, { httpApiStatus: 429 }) {
  readonly code = "rate_limited" as const
}

export class Timeout extends Schema.TaggedError<Timeout>()("Timeout", message, { httpApiStatus: 504 }) {
  readonly code = "timeout" as const
}

export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", message, { httpApiStatus: 502 }) {
  readonly code = "provider_unavailable" as const
}

export class ProviderError extends Schema.TaggedError<ProviderError>()("ProviderError", message, { httpApiStatus: 502 }) {
  readonly code = "provider_error" as const
}

export class NotSupported extends Schema.TaggedError<NotSupported>()("NotSupported", message, { httpApiStatus: 501 }) {
  readonly code = "not_supported" as const
}

export type RequestFailure =
  | InvalidInput
  | StateConflict
  | AuthMissing
  | AuthExpired
  | InsufficientScope
  | NotFound
  | RateLimited
  | Timeout
  | ProviderUnavailable
  | ProviderError
  | NotSupported
