/**
 * Query-string schemas shared by list routes, and the documentation helper of every endpoint: `limit` is an integer 1..100 (default 100,
 * applied by the handler), `cursor` an opaque string.
 */
import { Schema } from "effect"
import { OpenApi } from "effect/http-api"

export const MIN_LIMIT = 1
export const MAX_LIMIT = 100
export const DEFAULT_LIMIT = 100
export const Limit = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: MIN_LIMIT, maximum: MAX_LIMIT }))

export const pageQuery = {
  limit: Schema.optionalKey(Limit),
  cursor: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(2048)))
}

/** An operation's summary and description in the OpenAPI document (http/api/OpenApiDocument.ts). */
export const described = (summary: string, description: string) => OpenApi.annotations({ summary, description })
