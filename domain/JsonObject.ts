/**
 * A JSON object (a tool's input): any JSON value that is an object, neither an array nor null.
 *
 * One synchronous check of the whole value. `Schema.Record(Schema.String, Schema.Json)` means
 * the same but parses key by key through its index signature, and an execute request decodes
 * its input three times (the request body, the tool's input, the adapter's input).
 */
import { Schema } from "effect"

/** Whether a value is an object, neither an array nor null (a JSON object, when the value is JSON). */
export const isJsonObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const JsonObject = Schema.Json.check(
  Schema.makeFilter((value) => isJsonObject(value), {
    expected: "object",
    toJsonSchema: () => ({ type: "object" })
  })
)
