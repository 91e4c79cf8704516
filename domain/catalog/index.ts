/**
 * The catalog: every toolkit, its tools and triggers, and the client-side listing helpers.
 * Pure data and lookups; the dashboard, the client library, the MCP gateway and the executor
 * all import it.
 */
import type { DeliveryMode, ToolDefinition, ToolkitManifest, TriggerDefinition } from "./Catalog.ts"
import * as Demo from "./Demo.ts"
import * as Github from "./Github.ts"
import * as Http from "./Http.ts"
import * as Slack from "./Slack.ts"

export { closedParseOptions, decodeClosed, decodeToolInput, decodeTriggerFilters, describeIssue } from "./Input.ts"

/**
 * The catalog's version, reported on every tool result next to `toolVersion`.
 *
 * Rule: bump it (`<date>.<n>`) whenever a tool or trigger is added, removed, or changes its
 * `version`; a tool's version changes whenever its input, output or behaviour changes. The test
 * in test/domain/catalog pins the fingerprint of every `name@version` to this value, so a
 * version change without a catalog bump fails the build.
 */
export const catalogVersion = "2026-11-28.1"

export const toolkits: ReadonlyArray<ToolkitManifest> = [Demo.manifest, Http.manifest, Slack.manifest, Github.manifest]

const tools: ReadonlyArray<ToolDefinition> = toolkits.flatMap((toolkit) => toolkit.tools)
const triggers: ReadonlyArray<TriggerDefinition> = toolkits.flatMap((toolkit) => toolkit.triggers)
const toolsByName: ReadonlyMap<string, ToolDefinition> = new Map(tools.map((tool) => [tool.name, tool]))
const triggersByName: ReadonlyMap<string, TriggerDefinition> = new Map(triggers.map((trigger) => [trigger.name, trigger]))
const toolkitsByName: ReadonlyMap<string, ToolkitManifest> = new Map(toolkits.map((toolkit) => [toolkit.name, toolkit]))

/** `slack.post_message` → `slack__post_message`: the name used where dots are not allowed (MCP). */
export const toWireName = (name: string): string => name.replace(".", "__")

/** `<toolkit>.<name>` or `<toolkit>__<name>`, each part letters, digits, `_` and `-`, no dot in either. */
const CANONICAL = /^[A-Za-z0-9][A-Za-z0-9_-]*\.[A-Za-z0-9][A-Za-z0-9_-]*$/

/** Accepts the canonical dotted name or the wire name; undefined when neither form is valid. */
export const toCanonicalName = (name: string): string | undefined => {
  const dot = name.indexOf(".")
  const canonical = dot > 0
    ? (name.indexOf("__") < 0 ? name : undefined)
    : name.indexOf("__") > 0
    ? `${name.slice(0, name.indexOf("__"))}.${name.slice(name.indexOf("__") + 2)}`
    : undefined
  return canonical !== undefined && CANONICAL.test(canonical) ? canonical : undefined
}

export const findTool = (name: string): ToolDefinition | undefined => {
  const canonical = toCanonicalName(name)
  return canonical === undefined ? undefined : toolsByName.get(canonical)
}

export const findTrigger = (name: string): TriggerDefinition | undefined => {
  const canonical = toCanonicalName(name)
  return canonical === undefined ? undefined : triggersByName.get(canonical)
}

export const findToolkit = (name: string): ToolkitManifest | undefined => toolkitsByName.get(name)

export const listToolkits = (): ReadonlyArray<ToolkitManifest> => [...toolkitsByName.values()]

export interface ToolQuery {
  readonly capability?: string | undefined
  readonly toolkit?: string | undefined
}

export const listTools = (query: ToolQuery = {}): ReadonlyArray<ToolDefinition> =>
  tools.filter((tool) =>
    (query.capability === undefined || tool.capability === query.capability) &&
    (query.toolkit === undefined || tool.toolkit === query.toolkit)
  )

export interface TriggerQuery {
  readonly capability?: string | undefined
  readonly deliveryMode?: DeliveryMode | undefined
  readonly toolkit?: string | undefined
}

export const listTriggers = (query: TriggerQuery = {}): ReadonlyArray<TriggerDefinition> =>
  triggers.filter((trigger) =>
    (query.capability === undefined || trigger.capability === query.capability) &&
    (query.deliveryMode === undefined || trigger.deliveryMode === query.deliveryMode) &&
    (query.toolkit === undefined || trigger.toolkit === query.toolkit)
  )

/** `name@version` of every tool and trigger, sorted: what `catalogVersion` must follow. */
export const catalogFingerprint = (): string =>
  [...tools, ...triggers].map((entry) => `${entry.name}@${entry.version}`).toSorted().join(",")

export { Demo, Github, Http, Slack }
