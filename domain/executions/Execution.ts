/**
 * The Execution actor's model: events, state, `evolve`, commands and `decide`, and the public
 * record that a state shows. Pure: time comes in on every command (epoch milliseconds).
 *
 * Every event after `ExecutionRequested` carries `record`, the public record as it stands after
 * the event, so the `executions` projection is a per-event upsert and the webhook source can
 * rebuild terminal envelopes from the terminal event alone. A request that may wait (async, or
 * sync behind a full concurrency cap) carries its input sealed (never plain) so that start-up
 * recovery can dispatch it; a request recorded together with its start never waits and keeps no
 * input. Neither the sealed input, the idempotency hash (older events carry one) nor the owner
 * (the process that dispatches it, so that peers can take over from a dead one) ever reaches the
 * record.
 */
import { Schema } from "effect"
import { type NormalizedError, normalized, StateConflict } from "../Errors.ts"
import { streamCodec } from "../EventCodec.ts"
import { ExecutionMode, ExecutionRecord } from "./ExecutionRecord.ts"
import { isoTime, parseTime } from "../Time.ts"

export const STREAM_TYPE = "execution"
export const streamId = (executionId: string): string => `execution-${executionId}`

export const ExecutionRequested = Schema.Struct({
  type: Schema.Literal("ExecutionRequested"),
  executionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String,
  tool: Schema.String,
  toolVersion: Schema.String,
  catalogVersion: Schema.String,
  mode: ExecutionMode,
  connectionId: Schema.optionalKey(Schema.String),
  attachments: Schema.optionalKey(Schema.Array(Schema.String)),
  sealedInput: Schema.optionalKey(Schema.String),
  inputHash: Schema.optionalKey(Schema.String),
  /** The process that dispatches it (ExecutionOwners); older events have none. */
  owner: Schema.optionalKey(Schema.String),
  requestedAt: Schema.String
})
export type ExecutionRequested = typeof ExecutionRequested.Type

export const ExecutionStarted = Schema.Struct({
  type: Schema.Literal("ExecutionStarted"),
  startedAt: Schema.String,
  /** The process whose dispatch began (a peer may have adopted a pending execution). */
  owner: Schema.optionalKey(Schema.String),
  record: ExecutionRecord
})
export const ExecutionSucceeded = Schema.Struct({ type: Schema.Literal("ExecutionSucceeded"), record: ExecutionRecord })
export const ExecutionFailed = Schema.Struct({ type: Schema.Literal("ExecutionFailed"), record: ExecutionRecord })
export const ExecutionCancelled = Schema.Struct({
  type: Schema.Literal("ExecutionCancelled"),
  dispatchMayHaveBegun: Schema.Boolean,
  record: ExecutionRecord
})
export const ExecutionReplayed = Schema.Struct({
  type: Schema.Literal("ExecutionReplayed"),
  at: Schema.String,
  record: ExecutionRecord
})

export const ExecutionEvent = Schema.Union([
  ExecutionRequested,
  ExecutionStarted,
  ExecutionSucceeded,
  ExecutionFailed,
  ExecutionCancelled,
  ExecutionReplayed
])
export type ExecutionEvent = typeof ExecutionEvent.Type

/** How execution events enter the log and come back out of it (EventCodec.ts). */
export const executionCodec = streamCodec(STREAM_TYPE, ExecutionEvent)

/**
 * Undefined before the request; otherwise the request, the public record it has become, and the
 * process that owns its dispatch (never part of the record).
 */
export type ExecutionState =
  | undefined
  | {
    readonly request: ExecutionRequested
    readonly record: ExecutionRecord
    readonly owner: string | undefined
  }

/** The pending record of a request: the base fields, nothing else. */
export const pendingRecord = (request: ExecutionRequested): ExecutionRecord => ({
  executionId: request.executionId,
  projectId: request.projectId,
  userId: request.userId,
  tool: request.tool,
  toolVersion: request.toolVersion,
  catalogVersion: request.catalogVersion,
  mode: request.mode,
  status: "pending",
  ...(request.connectionId !== undefined ? { connectionId: request.connectionId } : {}),
  createdAt: request.requestedAt,
  ...(request.attachments !== undefined
    ? { attachments: { count: request.attachments.length, fileIds: [...request.attachments] } }
    : {})
})

export const evolve = (state: ExecutionState, event: ExecutionEvent): ExecutionState => {
  switch (event.type) {
    case "ExecutionRequested":
      return { request: event, record: pendingRecord(event), owner: event.owner }
    case "ExecutionStarted":
      return state === undefined ? state : { request: state.request, record: event.record, owner: event.owner ?? state.owner }
    case "ExecutionSucceeded":
    case "ExecutionFailed":
    case "ExecutionCancelled":
    case "ExecutionReplayed":
      return state === undefined ? state : { ...state, record: event.record }
  }
}

export const fold = (events: ReadonlyArray<ExecutionEvent>): ExecutionState =>
  events.reduce<ExecutionState>(evolve, undefined)

export const toRecord = (state: ExecutionState): ExecutionRecord | undefined => state?.record

export const isTerminalState = (state: ExecutionState): boolean =>
  state !== undefined && (state.record.status === "succeeded" || state.record.status === "failed" ||
    state.record.status === "cancelled")

// Commands: imperative, each with the time it happens at.
export type ExecutionCommand =
  | { readonly _tag: "RequestExecution"; readonly request: Omit<ExecutionRequested, "type"> }
  | { readonly _tag: "StartDispatch"; readonly now: number; readonly owner?: string | undefined }
  | { readonly _tag: "CompleteExecution"; readonly now: number; readonly output: Schema.Json }
  | { readonly _tag: "FailExecution"; readonly now: number; readonly error: NormalizedError }
  | { readonly _tag: "CancelExecution"; readonly now: number }
  | { readonly _tag: "MarkReplayed"; readonly now: number }
  /**
   * Recovery: dispatch may have begun in `owner`, a process that died. Refused when another
   * process has started it since (the owner changed).
   */
  | { readonly _tag: "InterruptExecution"; readonly now: number; readonly owner: string | undefined }

type Base = Omit<ExecutionRecord, "status" | "output" | "error" | "latencyMs" | "cancellation">

/** The base fields of a record, whatever its status (variant fields dropped). */
const baseOf = (record: ExecutionRecord): Base => {
  const { executionId, projectId, userId, tool, toolVersion, catalogVersion, mode, createdAt } = record
  return {
    executionId,
    projectId,
    userId,
    tool,
    toolVersion,
    catalogVersion,
    mode,
    ...(record.connectionId !== undefined ? { connectionId: record.connectionId } : {}),
    createdAt,
    ...(record.startedAt !== undefined ? { startedAt: record.startedAt } : {}),
    ...(record.replayed !== undefined ? { replayed: record.replayed } : {}),
    ...(record.source !== undefined ? { source: record.source } : {}),
    ...(record.attachments !== undefined ? { attachments: record.attachments } : {})
  }
}

/** Latency counts from dispatch when it began, else from the request (a cancel while pending). */
const latency = (record: ExecutionRecord, now: number): number =>
  Math.max(0, now - parseTime(record.startedAt ?? record.createdAt))

const conflict = (record: ExecutionRecord, what: string) =>
  new StateConflict({ message: `Execution ${record.executionId} is ${record.status}; it cannot be ${what}.` })

export type Decision = ReadonlyArray<ExecutionEvent>

/**
 * Decides the events a command produces in a state. A cancel of a cancelled execution produces
 * no event (the caller answers with the unchanged record); a cancel of a succeeded or failed one
 * is a `StateConflict` (409).
 */
export const decide = (command: ExecutionCommand, state: ExecutionState): Decision | StateConflict => {
  if (command._tag === "RequestExecution") {
    if (state !== undefined) return new StateConflict({ message: `Execution ${command.request.executionId} exists.` })
    return [{ type: "ExecutionRequested", ...command.request }]
  }
  if (state === undefined) return new StateConflict({ message: "The execution does not exist." })
  const record = state.record
  const terminal = isTerminalState(state)
  switch (command._tag) {
    case "StartDispatch": {
      if (record.status !== "pending") return conflict(record, "started")
      const startedAt = isoTime(command.now)
      return [{
        type: "ExecutionStarted",
        startedAt,
        ...(command.owner !== undefined ? { owner: command.owner } : {}),
        record: { ...baseOf(record), startedAt, status: "running" }
      }]
    }
    case "CompleteExecution": {
      if (terminal) return conflict(record, "completed")
      const completed = { ...baseOf(record), completedAt: isoTime(command.now), latencyMs: latency(record, command.now) }
      return [{ type: "ExecutionSucceeded", record: { ...completed, status: "succeeded", output: command.output } }]
    }
    case "FailExecution": {
      if (terminal) return conflict(record, "failed")
      const completed = { ...baseOf(record), completedAt: isoTime(command.now), latencyMs: latency(record, command.now) }
      return [{ type: "ExecutionFailed", record: { ...completed, status: "failed", error: command.error } }]
    }
    case "InterruptExecution": {
      if (record.status !== "running" || state.owner !== command.owner) return conflict(record, "interrupted")
      const error = normalized("execution_interrupted", "The service restarted after dispatch to the provider may have begun.")
      const completed = { ...baseOf(record), completedAt: isoTime(command.now), latencyMs: latency(record, command.now) }
      return [{ type: "ExecutionFailed", record: { ...completed, status: "failed", error } }]
    }
    case "CancelExecution": {
      if (record.status === "cancelled") return []
      if (terminal) return conflict(record, "cancelled")
      const dispatchMayHaveBegun = record.status === "running"
      const error = normalized("execution_cancelled", "The execution was cancelled.")
      return [{
        type: "ExecutionCancelled",
        dispatchMayHaveBegun,
        record: {
          ...baseOf(record),
          completedAt: isoTime(command.now),
          latencyMs: latency(record, command.now),
          status: "cancelled",
          error,
          cancellation: { dispatchMayHaveBegun }
        }
      }]
    }
    case "MarkReplayed": {
      if (record.replayed === true) return []
      return [{ type: "ExecutionReplayed", at: isoTime(command.now), record: { ...record, replayed: true } }]
    }
  }
}
