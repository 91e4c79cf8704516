/**
 * Closed decoding of tool inputs and trigger filters. Effect Schema strips unknown keys by
 * default and has no per-schema switch, so every decode of catalog data goes through these
 * helpers, which apply `onExcessProperty: "error"` and turn the issue into an `InvalidInput`
 * whose message names the offending field.
 */
import { Effect, Schema, SchemaIssue } from "effect"
import type { ToolDefinition, TriggerDefinition } from "./Catalog.ts"
import { InvalidInput } from "../Errors.ts"

/** The parse options under which catalog schemas are meant to be decoded. */
export const closedParseOptions = { onExcessProperty: "error", errors: "first" } as const

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  leafHook: (issue) =>
    issue instanceof SchemaIssue.UnexpectedKey
      ? "is not a known field"
      : issue instanceof SchemaIssue.MissingKey
      ? "is required"
      : SchemaIssue.defaultLeafHook(issue)
})

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.reduce<string>((out, key) => {
    if (typeof key === "number") return `${out}[${key}]`
    const name = String(key)
    return out === "" ? name : `${out}.${name}`
  }, "")

/** One line naming the first bad field: `field "ms": Expected a value between 0 and 600000`. */
export const describeIssue = (issue: SchemaIssue.Issue): string => {
  const first = formatter(issue).issues[0]
  if (first === undefined) return "invalid value"
  const path = formatPath((first.path ?? []).map((segment) =>
    typeof segment === "object" && segment !== null ? segment.key : segment
  ))
  const message = first.message
  if (path === "") return message
  if (message === "is not a known field" || message === "is required") return `field "${path}" ${message}`
  return `field "${path}": ${message}`
}

/** Decodes `input` with `schema`, rejecting unknown fields; `subject` prefixes the message. */
export const decodeClosed = <T, E>(schema: Schema.Codec<T, E>, subject: string) => {
  const decode = Schema.decodeUnknownEffect(schema, closedParseOptions)
  return (input: unknown): Effect.Effect<T, InvalidInput> =>
    // Eager: a synchronous decode stays a completed Exit, so callers can tell it has finished.
    Effect.mapErrorEager(decode(input), (error) => new InvalidInput({ message: `${subject}: ${describeIssue(error.issue)}` }))
}

/** Validates a tool input against the tool's codec (unknown fields rejected). */
export const decodeToolInput = (tool: ToolDefinition, input: unknown): Effect.Effect<unknown, InvalidInput> =>
  decodeClosed(tool.input, `Invalid input for ${tool.name}`)(input)

/** Validates a subscription's filters against the trigger's codec (unknown fields rejected). */
export const decodeTriggerFilters = (
  trigger: TriggerDefinition,
  filters: unknown
): Effect.Effect<unknown, InvalidInput> => decodeClosed(trigger.filters, `Invalid filters for ${trigger.name}`)(filters)
