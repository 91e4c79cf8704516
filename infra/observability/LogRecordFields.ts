/**
 * OTLP log records with their fields as attributes. The service logs a message and a plain object
 * of fields (`Effect.logInfo("request", {method, route, status, …})`); Effect's OTLP logger puts
 * such an object into the record's body as one formatted string, beside the message, so a log
 * backend could not filter on a route, a status or a delivery id (outside audit). Here, before
 * export, each such part of the body becomes attributes and the body is the message alone.
 * Attributes already set (annotations, the fiber id) are kept; a part that is no JSON object
 * stays in the body.
 */
import type { LogsData } from "effect/observability/OtlpLogger"
import { entriesToAttributes, type AnyValue, type KeyValue } from "effect/observability/OtlpResource"

const fieldsOf = (part: AnyValue): Record<string, unknown> | undefined => {
  const text = part.stringValue
  if (typeof text !== "string" || !text.startsWith("{")) return undefined
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

interface Flattened {
  readonly body: AnyValue
  readonly attributes: Array<KeyValue>
}

/** One record's body and attributes, the fields of its body moved into its attributes. */
export const flattenRecord = (body: AnyValue | undefined, attributes: ReadonlyArray<KeyValue>): Flattened | undefined => {
  const parts = body?.arrayValue?.values
  if (parts === undefined || parts.length < 2) return undefined
  const kept: Array<AnyValue> = []
  const taken = new Set(attributes.map((attribute) => attribute.key))
  const added: Array<KeyValue> = []
  for (const part of parts) {
    const fields = fieldsOf(part)
    if (fields === undefined) {
      kept.push(part)
      continue
    }
    for (const attribute of entriesToAttributes(Object.entries(fields))) {
      if (taken.has(attribute.key)) continue
      taken.add(attribute.key)
      added.push(attribute)
    }
  }
  if (added.length === 0) return undefined
  return { body: kept.length === 1 ? kept[0]! : { arrayValue: { values: kept } }, attributes: [...attributes, ...added] }
}

/** Every record of an export, flattened where its body carries fields. */
export const flattenLogs = (data: LogsData): LogsData => ({
  ...data,
  resourceLogs: data.resourceLogs.map((resource) => ({
    ...resource,
    scopeLogs: resource.scopeLogs.map((scope) =>
      scope.logRecords === undefined ? scope : {
        ...scope,
        logRecords: scope.logRecords.map((record) => {
          const flattened = flattenRecord(record.body, record.attributes)
          return flattened === undefined ? record : { ...record, ...flattened }
        })
      }
    )
  }))
})
