/**
 * What tools/list shows and what `service.search_tools` finds (spec, "MCP gateway"; decisions.md
 * section 7). Pure: the catalog and the session's facts in, MCP tool descriptors out.
 *
 * Tools are listed under their canonical dotted names with the catalog's input schemas and
 * annotations. `execution.taskSupport` appears only when the session negotiated tasks: a tool
 * that is async by nature is `required`, every other tool that runs as an execution `optional`,
 * and the search, which is no execution, `forbidden`. Without negotiation no tool carries it,
 * and a plain call of an async-by-nature tool runs async and waits (ToolCalls.ts).
 */
import type { JsonSchema, ToolDefinition } from "../domain/catalog/Catalog.ts"
import { catalogVersion, listTools, toWireName } from "../domain/catalog/index.ts"
import { TOOL_META } from "./ToolResults.ts"

export const SEARCH_TOOL = "service.search_tools"
export const EXECUTE_TOOL = "service.execute_tool"

export const SEARCH_DEFAULT_LIMIT = 10
export const SEARCH_MAX_LIMIT = 50

export type TaskSupport = "required" | "optional" | "forbidden"

export interface ToolDescriptor {
  readonly [key: string]: unknown
  readonly name: string
  readonly title?: string
  readonly description: string
  readonly inputSchema: JsonSchema & { readonly type: "object" }
  readonly outputSchema?: JsonSchema & { readonly type: "object" }
  readonly annotations?: { readonly [key: string]: unknown }
  readonly execution?: { readonly taskSupport: TaskSupport }
  readonly _meta?: { readonly [key: string]: unknown }
}

const objectSchema = (schema: JsonSchema): (JsonSchema & { readonly type: "object" }) | undefined =>
  schema.type === "object" ? (schema as JsonSchema & { readonly type: "object" }) : undefined

const searchDescriptor: ToolDescriptor = {
  name: SEARCH_TOOL,
  title: "Search tools",
  description: "Finds catalog tools whose name, toolkit, capability or description match the query's words. " +
    "Returns compact cards; call a tool found here with service.execute_tool.",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", description: "Words to look for." },
      limit: { type: "integer", minimum: 1, maximum: SEARCH_MAX_LIMIT, default: SEARCH_DEFAULT_LIMIT }
    },
    required: ["query"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: { tools: { type: "array", items: { type: "object" } } },
    required: ["tools"]
  },
  annotations: { title: "Search tools", readOnlyHint: true, idempotentHint: true, openWorldHint: false }
}

const executeDescriptor: ToolDescriptor = {
  name: EXECUTE_TOOL,
  title: "Execute a tool",
  description: "Runs the catalog tool `name` with `input`, exactly as calling that tool directly would.",
  inputSchema: {
    type: "object",
    properties: {
      name: { type: "string", description: "The tool's canonical (toolkit.name) or wire (toolkit__name) name." },
      input: { type: "object", description: "The tool's input; {} when omitted." }
    },
    required: ["name"],
    additionalProperties: false
  },
  annotations: { title: "Execute a tool", openWorldHint: true }
}

/** A catalog tool as MCP lists it; `tasks` says whether the session negotiated tasks. */
export const describeTool = (tool: ToolDefinition, tasks: boolean): ToolDescriptor => {
  const output = objectSchema(tool.outputSchema)
  return {
    name: tool.name,
    ...(tool.annotations.title !== undefined ? { title: tool.annotations.title } : {}),
    description: tool.description,
    inputSchema: objectSchema(tool.inputSchema) ?? { type: "object" },
    ...(output !== undefined ? { outputSchema: output } : {}),
    annotations: { ...tool.annotations },
    ...(tasks ? { execution: { taskSupport: tool.asyncByNature ? "required" : "optional" } } : {}),
    _meta: {
      [TOOL_META]: {
        toolkit: tool.toolkit,
        capability: tool.capability,
        version: tool.version,
        catalogVersion,
        wireName: toWireName(tool.name),
        asyncByNature: tool.asyncByNature
      }
    }
  }
}

/** The built-in tools, always listed. */
export const builtInTools = (tasks: boolean): ReadonlyArray<ToolDescriptor> =>
  tasks
    ? [{ ...searchDescriptor, execution: { taskSupport: "forbidden" } }, { ...executeDescriptor, execution: { taskSupport: "optional" } }]
    : [searchDescriptor, executeDescriptor]

/**
 * tools/list: in search mode only the built-ins; in catalog mode the built-ins and the catalog's
 * tools whose toolkit `usable` admits (every toolkit for a session without a user).
 */
export const listFor = (
  mode: "catalog" | "search",
  tasks: boolean,
  usable: (toolkit: string) => boolean
): ReadonlyArray<ToolDescriptor> =>
  mode === "search"
    ? builtInTools(tasks)
    : [...builtInTools(tasks), ...listTools().filter((tool) => usable(tool.toolkit)).map((tool) => describeTool(tool, tasks))]

export type ToolCard = {
  readonly name: string
  readonly description: string
  readonly capability: string
  readonly toolkit: string
  /** The input schema in brief: each field's JSON type, and which are required. */
  readonly input: { readonly properties: { readonly [field: string]: string }; readonly required: ReadonlyArray<string> }
}

const summarize = (schema: JsonSchema): ToolCard["input"] => {
  const properties: Record<string, string> = {}
  const declared = schema.properties
  if (typeof declared === "object" && declared !== null) {
    for (const [field, value] of Object.entries(declared)) {
      const type = typeof value === "object" && value !== null && "type" in value ? value.type : undefined
      properties[field] = typeof type === "string" ? type : "any"
    }
  }
  const required = Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === "string") : []
  return { properties, required }
}

const card = (tool: ToolDefinition): ToolCard => ({
  name: tool.name,
  description: tool.description,
  capability: tool.capability,
  toolkit: tool.toolkit,
  input: summarize(tool.inputSchema)
})

const words = (text: string): ReadonlyArray<string> => [...new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== ""))]

/**
 * Ranks the catalog's tools by how many of the query's words each of their name, toolkit,
 * capability and description contains (a word found in two fields counts twice); tools with no
 * match are left out; ties go by name.
 */
export const searchTools = (query: string, limit: number): ReadonlyArray<ToolCard> => {
  const wanted = words(query)
  return listTools()
    .map((tool) => {
      const fields = [tool.name, tool.toolkit, tool.capability, tool.description].map((f) => f.toLowerCase())
      const score = wanted.reduce((sum, word) => sum + fields.filter((field) => field.includes(word)).length, 0)
      return { tool, score }
    })
    .filter((entry) => entry.score > 0)
    .toSorted((a, b) => b.score - a.score || (a.tool.name < b.tool.name ? -1 : 1))
    .slice(0, limit)
    .map((entry) => card(entry.tool))
}
