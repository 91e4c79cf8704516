/**
 * Tool results as decisions.md section 7 fixes them. Pure: execution records and normalized
 * errors in, `CallToolResult` objects out.
 *
 * A failure is `isError: true` with the normalized error twice (as `_meta["dev.service/error"]`
 * and as the JSON text content) and never `structuredContent`: a listed `outputSchema` describes
 * successes only, and SDK clients validate `structuredContent` against it. A success carries the
 * output as JSON text and, when it is an object, as `structuredContent`. Once an execution
 * exists, `_meta["dev.service/execution"]` says which one, at what status.
 */
import type { Schema } from "effect"
import { normalized, type NormalizedError } from "../domain/Errors.ts"
import type { ExecutionRecord } from "../domain/executions/ExecutionRecord.ts"
import { isJsonObject } from "../domain/JsonObject.ts"

export const EXECUTION_META = "dev.service/execution"
export const ERROR_META = "dev.service/error"
export const TOOL_META = "dev.service/tool"
export const USER_META = "dev.service/userId"
export const CONNECTION_META = "dev.service/connectionId"
export const IDEMPOTENCY_META = "dev.service/idempotencyKey"
export const RELATED_TASK_META = "io.modelcontextprotocol/related-task"

export interface ExecutionMeta {
  readonly executionId: string
  readonly tool: string
  readonly toolVersion: string
  readonly catalogVersion: string
  readonly status: ExecutionRecord["status"]
  readonly latencyMs?: number
}

export interface ToolResult {
  readonly [key: string]: unknown
  readonly content: ReadonlyArray<{ readonly type: "text"; readonly text: string }>
  readonly structuredContent?: { readonly [key: string]: unknown }
  readonly isError?: true
  readonly _meta?: { readonly [key: string]: unknown }
}

export const executionMeta = (record: ExecutionRecord): ExecutionMeta => ({
  executionId: record.executionId,
  tool: record.tool,
  toolVersion: record.toolVersion,
  catalogVersion: record.catalogVersion,
  status: record.status,
  ...("latencyMs" in record ? { latencyMs: record.latencyMs } : {})
})

const text = (value: unknown) => [{ type: "text" as const, text: JSON.stringify(value) }]

/** A success: the output as text, and as `structuredContent` when it is an object. */
export const successResult = (output: Schema.Json, meta?: { readonly [key: string]: unknown }): ToolResult => ({
  content: text(output),
  ...(isJsonObject(output) ? { structuredContent: output } : {}),
  ...(meta !== undefined ? { _meta: meta } : {})
})

/** A failure before or after an execution exists. */
export const errorResult = (error: NormalizedError, record?: ExecutionRecord): ToolResult => ({
  content: text(error),
  isError: true,
  _meta: {
    [ERROR_META]: error,
    ...(record !== undefined ? { [EXECUTION_META]: executionMeta(record) } : {})
  }
})

/**
 * The canonical result of a record: its output, its error (failed, cancelled), or, for a record
 * still pending or running when the wait ended, a `timeout` failure naming the execution.
 */
export const recordResult = (record: ExecutionRecord): ToolResult => {
  switch (record.status) {
    case "succeeded":
      return successResult(record.output, { [EXECUTION_META]: executionMeta(record) })
    case "failed":
    case "cancelled":
      return errorResult(record.error, record)
    case "pending":
    case "running":
      return errorResult(
        normalized("timeout", `Execution ${record.executionId} is still ${record.status}; read it later by its id.`),
        record
      )
  }
}

/** The same result, marked as the result of a task (tasks/result). */
export const withRelatedTask = (result: ToolResult, taskId: string): ToolResult => ({
  ...result,
  _meta: { ...result._meta, [RELATED_TASK_META]: { taskId } }
})
