/**
 * The `executions` view: one row per execution holding its public record, updated inline (a GET
 * right after a POST sees it). Every execution event after the request carries the resulting
 * record, so each event is one upsert. Ids are time-ordered, so `execution_id` descending is
 * newest first.
 */
import { type ExecutionEvent, pendingRecord, STREAM_TYPE } from "../../domain/executions/Execution.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { parseTime } from "../../domain/Time.ts"
import type { Json, RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, RowChange, TableSpec } from "../eventlog/Projection.ts"

export const TABLE = "executions"

export const executionsTable: TableSpec = {
  name: TABLE,
  columns: {
    project_id: "text",
    execution_id: "text",
    user_id: "text",
    tool: "text",
    status: "text",
    created_ms: "bigint",
    record: "jsonb"
  },
  primaryKey: ["project_id", "execution_id"],
  // Newest first within a project is the primary key read backwards: no index of its own.
  indexes: [["project_id", "user_id", "-execution_id"], ["status", "execution_id"]]
}

export const rowOf = (record: ExecutionRecord) => ({
  project_id: record.projectId,
  execution_id: record.executionId,
  user_id: record.userId,
  tool: record.tool,
  status: record.status,
  created_ms: parseTime(record.createdAt),
  record: record as unknown as Json
})

export const projectExecution = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  const event = recorded.data as unknown as ExecutionEvent
  const record = event.type === "ExecutionRequested" ? pendingRecord(event) : event.record
  return [{ op: "upsert", table: TABLE, row: rowOf(record) }]
}

export const executionsProjection: Projection = {
  name: "executions",
  mode: "inline",
  tables: [executionsTable],
  streamTypes: [STREAM_TYPE],
  project: projectExecution
}
