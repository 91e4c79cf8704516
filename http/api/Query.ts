/**
 * Query-string schemas shared by list routes, and the documentation helper of every endpoint: `limit` is an integer 1..100 (default 100,
 * applied by the handler), `cursor` an opaque string.
 */
import { Schema, SchemaTransformation } from "effect"
import { OpenApi } from "effect/http-api"

export const MIN_LIMIT = 1
export const MAX_LIMIT = 100
export const DEFAULT_LIMIT = 100
/**
 * Decimal digits only: a number parser would also take `1e1`, `+5`, ` 5`, `100.0` and `0x10`
 * (as 16), which no client means as a page size.
 */
const limitMessage = { message: `limit must be an integer from ${MIN_LIMIT} to ${MAX_LIMIT}` }
/** Whatever is wrong with it (not digits, out of range, given twice), one message says what it takes. */
export const Limit = Schema.String.annotate(limitMessage).check(Schema.isPattern(/^[0-9]{1,6}$/u, limitMessage)).pipe(
  Schema.decodeTo(Schema.Number.check(Schema.isInt(limitMessage), Schema.isBetween({ minimum: MIN_LIMIT, maximum: MAX_LIMIT }, limitMessage)), SchemaTransformation.numberFromString)
)

export const pageQuery = {
  limit: Schema.optionalKey(Limit),
  cursor: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(2048)))
}

/** An operation's summary and description in the OpenAPI document (http/api/OpenApiDocument.ts). */
export const described = (summary: string, description: string) => OpenApi.annotations({ summary, description })
