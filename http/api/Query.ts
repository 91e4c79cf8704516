/**
 * Query-string schemas shared by list routes: `limit` is an integer 1..100 (default 100,
 * applied by the handler), `cursor` an opaque string.
 */
import { Schema } from "effect"

export const Limit = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
export const DEFAULT_LIMIT = 100

export const pageQuery = {
  limit: Schema.optionalKey(Limit),
  cursor: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(2048)))
}
