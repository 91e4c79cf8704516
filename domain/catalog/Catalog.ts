/**
 * The catalog's shape: toolkits with manifests, tools with input and output schemas, trigger
 * definitions. The catalog is code (domain/catalog/*), versioned by `catalogVersion`, and listed
 * client-side; the dashboard and the client library import it.
 */
import { Schema } from "effect"

export type AuthClass = "none" | "api_key" | "bearer" | "oauth2"
export type DeliveryMode = "push" | "polling"

/** A JSON Schema document (draft 2020-12) as published to MCP clients and docs. */
export type JsonSchema = { readonly [key: string]: unknown }

export interface ToolAnnotations {
  readonly title?: string
  readonly readOnlyHint?: boolean
  readonly destructiveHint?: boolean
  readonly idempotentHint?: boolean
  readonly openWorldHint?: boolean
}

export interface ToolDefinition {
  /** Canonical dotted name `<toolkit>.<name>`. */
  readonly name: string
  readonly toolkit: string
  readonly description: string
  readonly capability: string
  /** The tool's own version, reported on results as `toolVersion`. */
  readonly version: string
  /** Decodes and validates the input (unknown fields rejected). */
  readonly input: Schema.Codec<unknown, unknown>
  readonly inputSchema: JsonSchema
  readonly outputSchema: JsonSchema
  /** Scopes a connection must grant. */
  readonly scopes: ReadonlyArray<string>
  /** Async by nature: runs async even when called sync; MCP taskSupport `required`. */
  readonly asyncByNature: boolean
  /**
   * Computes its output from its input alone, inside the service: no I/O, nothing outside the
   * process changes. A sync run with its permit commits its request, start and outcome together
   * (docs/executions.md, "Pure tools").
   */
  readonly pure: boolean
  /** Per-tool dispatch timeout in milliseconds; exceeding it fails with `timeout`. */
  readonly timeoutMs: number
  readonly annotations: ToolAnnotations
}

/**
 * The longest text a trigger filter holds, in code points (JSON Schema's `maxLength` counts the
 * same way). A filter is compared for equality with a payload's field, which is never longer;
 * unbounded, one subscription could carry a mebibyte into every read of it and into the log.
 */
export const FILTER_TEXT_MAX = 255
/** The most values a list filter (GitHub labels) holds. */
export const FILTER_LIST_MAX = 100

/** A filter's text: at most `FILTER_TEXT_MAX` code points. */
export const FilterText = Schema.String.check(Schema.isMaxCodePoints(FILTER_TEXT_MAX))
/** `FilterText` in the JSON Schema a trigger publishes. */
export const filterTextSchema = (description: string) => ({ type: "string", maxLength: FILTER_TEXT_MAX, description })

export interface TriggerDefinition {
  /** Canonical dotted name `<toolkit>.<name>`. */
  readonly name: string
  readonly toolkit: string
  readonly capability: string
  readonly description: string
  readonly payloadSchema: JsonSchema
  readonly annotations: { readonly [key: string]: unknown }
  readonly version: string
  readonly deliveryMode: DeliveryMode
  readonly scopes: ReadonlyArray<string>
  /** Validates the trigger's portable filters. */
  readonly filters: Schema.Codec<unknown, unknown>
}

export interface ToolkitManifest {
  readonly name: string
  readonly version: string
  readonly description: string
  /** Auth classes a connection to this toolkit may use; `["none"]` needs no connection. */
  readonly authClasses: ReadonlyArray<AuthClass>
  readonly limits: { readonly maxConcurrentExecutionsPerProject?: number }
  readonly tools: ReadonlyArray<ToolDefinition>
  readonly triggers: ReadonlyArray<TriggerDefinition>
}
