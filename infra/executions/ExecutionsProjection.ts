/**
 * The `executions` view: one row per execution holding its public record, updated inline (a GET
 * right after a POST sees it). Every execution event after the request carries the resulting
 * record, so each event is one upsert. Ids are time-ordered, so `execution_id` descending is
 * newest first.
 */
import { Schema } from "effect"
import { executionCodec, pendingRecord, STREAM_TYPE, streamId } from "../../domain/executions/Execution.ts"
import { ExecutionRecord, TERMINAL } from "../../domain/executions/ExecutionRecord.ts"
import { STREAM_TYPE as IDEMPOTENCY_STREAM_TYPE, WINDOW_MS } from "../../domain/executions/Idempotency.ts"
import { parseTime } from "../../domain/Time.ts"
import type { RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, Row, RowChange, TableSpec } from "../eventlog/Projection.ts"

export const TABLE = "executions"

const TERMINAL_STATUSES: ReadonlySet<string> = TERMINAL

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
  indexes: [["project_id", "user_id", "-execution_id"], ["status", "execution_id"]],
  // Memory mode drops terminal executions finished before the retention window (but one an open
  // delivery will still send), and idempotency claims once their own window has passed too
  // (infra/eventlog/MemoryRetention.ts).
  retention: {
    since: (row) => Number(row.created_ms),
    finished: (row) => TERMINAL_STATUSES.has(String(row.status)),
    // An execution that ran longer than the window stays for the window after it finished
    // (an MCP task's result is read then).
    finishedAt: (row) => {
      const completedAt = (row.record as { readonly completedAt?: unknown } | null)?.completedAt
      return typeof completedAt === "string" ? parseTime(completedAt) : Number(row.created_ms)
    },
    stream: (row) => streamId(String(row.execution_id)),
    alsoStreams: [{ streamType: IDEMPOTENCY_STREAM_TYPE, minimumAgeMs: WINDOW_MS }]
  }
}

export const rowOf = (record: ExecutionRecord) => ({
  project_id: record.projectId,
  execution_id: record.executionId,
  user_id: record.userId,
  tool: record.tool,
  status: record.status,
  created_ms: parseTime(record.createdAt),
  record
})

const decodeRecord = Schema.decodeUnknownSync(ExecutionRecord)

/**
 * The record a row holds (the inverse of `rowOf`), decoded: a row this code did not write fails
 * here with the schema's message rather than reaching a client half-formed.
 */
export const recordOfRow = (row: Row): ExecutionRecord => decodeRecord(row.record)

export const projectExecution = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  const event = executionCodec.decode(recorded)
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
