/**
 * The tasks whose terminal `notifications/tasks/status` is not yet in the log (view
 * `mcp_open_tasks`): a row comes with `McpTaskCreated` and goes with that status, or with
 * `McpTaskExpired` when the task's time to live ran out first (Tasks.ts). A process that
 * starts reads it to take up the notifications of tasks whose watch ended with the process that
 * made them (Tasks.ts `resumeWatches`): a task whose execution a restart interrupts, or runs
 * later, still gets its terminal progress and status.
 *
 * In memory the rows of tasks that expired unfinished go with the retention sweep, and so do the
 * task streams left idle past the longest time to live (MemoryRetention.ts).
 */
import type { RecordedEvent } from "../infra/eventlog/EventStore.ts"
import type { Projection, RowChange } from "../infra/eventlog/Projection.ts"
import { MCP_TASK_STREAM_TYPE } from "./LogFeed.ts"
import { isJsonObject } from "../domain/JsonObject.ts"

export const OPEN_TASKS_TABLE = "mcp_open_tasks"

/** The longest a task is kept (Tasks.ts clamps every ttl to it). */
export const TASK_TTL_MAX_MS = 24 * 60 * 60 * 1000

export const STATUS_METHOD = "notifications/tasks/status"

/** The changes of one `mcp-task` event, read off its data without decoding the rest. */
const openTaskChanges = (event: RecordedEvent): ReadonlyArray<RowChange> => {
  const data = event.data
  if (!isJsonObject(data)) return []
  if (event.type === "McpTaskCreated") {
    // A refused call's task is failed, and notified so, at its creation.
    if (data.refusal !== undefined || typeof data.createdMs !== "number" || typeof data.ttlMs !== "number") return []
    return [{ op: "upsert", table: OPEN_TASKS_TABLE, row: { stream_id: event.streamId, expires_ms: data.createdMs + data.ttlMs } }]
  }
  if (event.type === "McpTaskExpired" || (event.type === "McpTaskNotified" && isJsonObject(data.notification) && data.notification.method === STATUS_METHOD)) {
    return [{ op: "delete", table: OPEN_TASKS_TABLE, key: { stream_id: event.streamId } }]
  }
  return []
}

export const openTasksProjection: Projection = {
  name: "mcp_open_tasks",
  mode: "inline",
  streamTypes: [MCP_TASK_STREAM_TYPE],
  tables: [{
    name: OPEN_TASKS_TABLE,
    columns: { stream_id: "text", expires_ms: "bigint" },
    primaryKey: ["stream_id"],
    retention: {
      since: (row) => Number(row.expires_ms),
      // A row past its expiry is a task nobody can read any more.
      finished: () => true,
      stream: (row) => String(row.stream_id),
      alsoStreams: [{ streamType: MCP_TASK_STREAM_TYPE, minimumAgeMs: TASK_TTL_MAX_MS }]
    }
  }],
  project: openTaskChanges
}
