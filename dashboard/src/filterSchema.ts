/**
 * The subscription form's filter fields, generated from a trigger's filter schema: the JSON
 * Schema the catalog publishes as `annotations.filtersSchema` (domain/catalog). Each property of
 * a simple type becomes one field; a value the form cannot express is left to the server's 422.
 */
import type { TriggerDefinition } from "../../domain/catalog/Catalog.ts"

export type FilterKind = "string" | "string-list" | "integer" | "number" | "boolean"

export interface FilterField {
  readonly name: string
  readonly kind: FilterKind
  readonly required: boolean
  readonly description?: string
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const kindOf = (schema: Readonly<Record<string, unknown>>): FilterKind | undefined => {
  switch (schema.type) {
    case "string":
      return "string"
    case "integer":
      return "integer"
    case "number":
      return "number"
    case "boolean":
      return "boolean"
    case "array":
      return isRecord(schema.items) && schema.items.type === "string" ? "string-list" : undefined
    default:
      return undefined
  }
}

export const filterFields = (trigger: TriggerDefinition): ReadonlyArray<FilterField> => {
  const schema = trigger.annotations.filtersSchema
  if (!isRecord(schema) || !isRecord(schema.properties)) return []
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name) => typeof name === "string") : [])
  return Object.entries(schema.properties).flatMap(([name, property]) => {
    if (!isRecord(property)) return []
    const kind = kindOf(property)
    if (kind === undefined) return []
    const description = typeof property.description === "string" ? property.description : undefined
    return [{ name, kind, required: required.has(name), ...(description === undefined ? {} : { description }) }]
  })
}

/** What the form holds per field: text for inputs, a flag for checkboxes. */
export type FilterValues = Readonly<Record<string, string | boolean>>

/**
 * The `filters` object to send: empty optional fields are left out; a list is comma separated;
 * numbers that do not parse are sent as typed, so the server names the problem.
 */
export type Filters = Record<string, string | number | boolean | Array<string>>

export const filtersFrom = (fields: ReadonlyArray<FilterField>, values: FilterValues): Filters => {
  const filters: Filters = {}
  for (const field of fields) {
    const value = values[field.name]
    if (field.kind === "boolean") {
      if (value === true) filters[field.name] = true
      continue
    }
    const text = typeof value === "string" ? value.trim() : ""
    if (text === "") continue
    if (field.kind === "string") filters[field.name] = text
    else if (field.kind === "string-list") filters[field.name] = text.split(",").map((part) => part.trim()).filter((part) => part !== "")
    else {
      const number = Number(text)
      filters[field.name] = Number.isFinite(number) ? number : text
    }
  }
  return filters
}
