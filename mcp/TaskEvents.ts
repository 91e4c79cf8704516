/**
 * The log's record of MCP tasks (stream `mcp-task-<session>-<execution>`, LogFeed.ts).
 *
 * A task is its execution: status, result and times are read from the execution record. What
 * the execution does not know is which session asked for it as a task, for how long the task is
 * kept, and where its progress goes; `McpTaskCreated` keeps that, so tasks/get and tasks/result
 * answer on any process, after a restart too. `McpTaskNotified` carries each notification for
 * the session's GET stream (progress, terminal status), so a notification reaches the session
 * whichever process watched the execution, and a stream that resumes by `Last-Event-ID` replays
 * what it missed. Keying the stream by session makes a task invisible to every other session.
 */
import { Schema } from "effect"
import { NormalizedError } from "../domain/Errors.ts"
import type { NewEvent } from "../infra/eventlog/EventStore.ts"

export const ProgressToken = Schema.Union([Schema.String, Schema.Number])
export type ProgressToken = typeof ProgressToken.Type

export const McpTaskCreated = Schema.Struct({
  type: Schema.Literal("McpTaskCreated"),
  sessionId: Schema.String,
  /** The task's id: its execution's, or, for a refused call, the task's own (`tsk_…`). */
  executionId: Schema.String,
  projectId: Schema.String,
  /** The task's lifetime from creation, clamped to 1 min..24 h. */
  ttlMs: Schema.Int,
  createdMs: Schema.Number,
  progressToken: Schema.optionalKey(ProgressToken),
  /**
   * A call refused before any execution existed (its arguments, its user, its connection, a
   * rate limit): the task failed at once, and its result is this error.
   */
  refusal: Schema.optionalKey(NormalizedError)
})
export type McpTaskCreated = typeof McpTaskCreated.Type

export const Notification = Schema.Struct({
  method: Schema.String,
  params: Schema.Record(Schema.String, Schema.Json)
})
export type Notification = typeof Notification.Type

export const McpTaskNotified = Schema.Struct({
  type: Schema.Literal("McpTaskNotified"),
  sessionId: Schema.String,
  executionId: Schema.String,
  notification: Notification
})
export type McpTaskNotified = typeof McpTaskNotified.Type

/**
 * The task's time to live ran out before its execution's terminal status was recorded: no
 * notification follows, and the task leaves the open-tasks view (OpenTasks.ts).
 */
export const McpTaskExpired = Schema.Struct({
  type: Schema.Literal("McpTaskExpired"),
  sessionId: Schema.String,
  executionId: Schema.String
})
export type McpTaskExpired = typeof McpTaskExpired.Type

/**
 * A GET stream of the session opened (SessionStream.ts), in a stream of its own
 * (`mcp-task-<session>-stream_<token>`): every older stream of the session, on any process,
 * follows the log and ends when it meets a claim newer than its own, so no notification goes on
 * two streams.
 */
export const McpStreamClaimed = Schema.Struct({
  type: Schema.Literal("McpStreamClaimed"),
  sessionId: Schema.String,
  token: Schema.String
})
export type McpStreamClaimed = typeof McpStreamClaimed.Type

export const McpTaskEvent = Schema.Union([McpTaskCreated, McpTaskNotified, McpTaskExpired, McpStreamClaimed])
export type McpTaskEvent = typeof McpTaskEvent.Type

export const decodeTaskEvent = Schema.decodeUnknownOption(McpTaskEvent)

/** As the log takes it: the event is its own data. */
export const encodeTaskEvent = (event: McpTaskEvent, eventId: string): NewEvent => ({
  eventId,
  type: event.type,
  schemaVersion: 1,
  data: event
})
