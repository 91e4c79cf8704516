/**
 * The demo toolkit: tools with no provider behind them, used by tests, docs and the dashboard
 * to exercise every execution path (success, long-running and cancellable, each normalized
 * failure, attachment reads) without credentials.
 */
import { Schema } from "effect"
import { FilterText, filterTextSchema, type ToolDefinition, type ToolkitManifest, type TriggerDefinition } from "./Catalog.ts"
import { MAX_RETRY_AFTER_SECONDS } from "../Errors.ts"
import { JsonObject } from "../JsonObject.ts"

export const MAX_SLEEP_MS = 600_000

/** `file_<id>` as minted by domain/Ids.ts (Crockford base32 body of 32 characters). */
const FILE_ID_PATTERN = "^file_[0-9a-hjkmnp-tv-z]{32}$"

export const EchoInput = JsonObject

export const SleepInput = Schema.Struct({
  ms: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_SLEEP_MS }))
})

export const FailCode = Schema.Literals(["provider_error", "provider_unavailable", "rate_limited", "timeout"])
export type FailCode = typeof FailCode.Type

export const FailInput = Schema.Struct({
  code: FailCode,
  retryAfter: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: MAX_RETRY_AFTER_SECONDS })))
})

export const DigestInput = Schema.Struct({
  fileId: Schema.String.check(Schema.isPattern(new RegExp(FILE_ID_PATTERN), { expected: "a file id (file_<id>)" }))
})

export const EventFilters = Schema.Struct({ type: Schema.optionalKey(FilterText) })

const anyObject = { type: "object" } as const

export const echo: ToolDefinition = {
  name: "demo.echo",
  toolkit: "demo",
  description: "Returns its input unchanged. Any JSON object is accepted.",
  capability: "demo",
  version: "1.0.0",
  input: EchoInput,
  inputSchema: { ...anyObject, description: "Any JSON object; it is returned as the output." },
  outputSchema: { ...anyObject, description: "The input, unchanged." },
  scopes: [],
  asyncByNature: false,
  pure: true,
  timeoutMs: 10_000,
  annotations: { title: "Echo", readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

export const sleep: ToolDefinition = {
  name: "demo.sleep",
  toolkit: "demo",
  description: "Waits for `ms` milliseconds (at most 600000) and reports how long it slept. Runs as a task and can be cancelled.",
  capability: "demo",
  version: "1.0.0",
  input: SleepInput,
  inputSchema: {
    type: "object",
    properties: { ms: { type: "integer", minimum: 0, maximum: MAX_SLEEP_MS, description: "Milliseconds to wait." } },
    required: ["ms"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: { sleptMs: { type: "integer", minimum: 0 } },
    required: ["sleptMs"],
    additionalProperties: false
  },
  scopes: [],
  asyncByNature: true,
  pure: false,
  // The longest sleep plus room for scheduling, so only a stuck dispatch hits the timeout.
  timeoutMs: MAX_SLEEP_MS + 30_000,
  annotations: { title: "Sleep", readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

export const fail: ToolDefinition = {
  name: "demo.fail",
  toolkit: "demo",
  description: "Always fails with the normalized error named by `code`; `retryAfter` (seconds) is carried on rate_limited.",
  capability: "demo",
  version: "1.0.0",
  input: FailInput,
  inputSchema: {
    type: "object",
    properties: {
      code: { type: "string", enum: ["provider_error", "provider_unavailable", "rate_limited", "timeout"] },
      retryAfter: { type: "integer", minimum: 0, maximum: MAX_RETRY_AFTER_SECONDS, description: "Seconds; reported on rate_limited." }
    },
    required: ["code"],
    additionalProperties: false
  },
  outputSchema: { type: "object", description: "Never produced: the tool always fails.", additionalProperties: false },
  scopes: [],
  asyncByNature: false,
  pure: true,
  timeoutMs: 10_000,
  annotations: { title: "Fail", readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

export const digest: ToolDefinition = {
  name: "demo.digest",
  toolkit: "demo",
  description: "Computes the SHA-256 digest and size of a file attached to the execution.",
  capability: "demo",
  version: "1.0.0",
  input: DigestInput,
  inputSchema: {
    type: "object",
    properties: { fileId: { type: "string", pattern: FILE_ID_PATTERN, description: "An attached staged file." } },
    required: ["fileId"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: {
      sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
      size: { type: "integer", minimum: 0 }
    },
    required: ["sha256", "size"],
    additionalProperties: false
  },
  scopes: [],
  asyncByNature: false,
  pure: false,
  timeoutMs: 30_000,
  annotations: { title: "Digest an attachment", readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

const eventFiltersSchema = {
  type: "object",
  properties: { type: filterTextSchema("Only events whose `type` equals this value.") },
  additionalProperties: false
}

export const event: TriggerDefinition = {
  name: "demo.event",
  toolkit: "demo",
  capability: "demo",
  description: "Any event pushed to the subscription's ingest URL; the payload is the callback's `event` object.",
  payloadSchema: {
    type: "object",
    properties: { type: { type: "string" } },
    required: ["type"]
  },
  annotations: { title: "Demo event", filtersSchema: eventFiltersSchema },
  version: "1.0.0",
  deliveryMode: "push",
  scopes: [],
  filters: EventFilters
}

export const manifest: ToolkitManifest = {
  name: "demo",
  version: "1.0.0",
  description: "Built-in tools and a push trigger that need no provider or connection.",
  authClasses: ["none"],
  limits: { maxConcurrentExecutionsPerProject: 4 },
  tools: [echo, sleep, fail, digest],
  triggers: [event]
}
