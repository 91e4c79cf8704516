/**
 * The public execution record (spec, "Execution record"; decisions.md section 3): the base
 * fields plus exactly the variant fields of its status. It never holds the input, idempotency
 * identity, file bytes or credentials.
 */
import { Schema } from "effect"
import { NormalizedError } from "../Errors.ts"

export const ExecutionStatus = Schema.Literals(["pending", "running", "succeeded", "failed", "cancelled"])
export type ExecutionStatus = typeof ExecutionStatus.Type

export const ExecutionMode = Schema.Literals(["sync", "async"])
export type ExecutionMode = typeof ExecutionMode.Type

export const TERMINAL: ReadonlySet<ExecutionStatus> = new Set<ExecutionStatus>(["succeeded", "failed", "cancelled"])
export const isTerminal = (status: ExecutionStatus): boolean => TERMINAL.has(status)

const Base = {
  executionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String,
  tool: Schema.String,
  toolVersion: Schema.String,
  catalogVersion: Schema.String,
  mode: ExecutionMode,
  connectionId: Schema.optionalKey(Schema.String),
  createdAt: Schema.String,
  startedAt: Schema.optionalKey(Schema.String),
  completedAt: Schema.optionalKey(Schema.String),
  replayed: Schema.optionalKey(Schema.Literal(true)),
  source: Schema.optionalKey(Schema.Struct({ kind: Schema.Literal("voice_session"), sessionId: Schema.String })),
  attachments: Schema.optionalKey(Schema.Struct({ count: Schema.Int, fileIds: Schema.Array(Schema.String) }))
}

export const PendingExecution = Schema.Struct({ ...Base, status: Schema.Literal("pending") })
export const RunningExecution = Schema.Struct({ ...Base, status: Schema.Literal("running") })
export const SucceededExecution = Schema.Struct({
  ...Base,
  status: Schema.Literal("succeeded"),
  output: Schema.Json,
  latencyMs: Schema.Finite
})
export const FailedExecution = Schema.Struct({
  ...Base,
  status: Schema.Literal("failed"),
  error: NormalizedError,
  latencyMs: Schema.Finite
})
export const CancelledExecution = Schema.Struct({
  ...Base,
  status: Schema.Literal("cancelled"),
  error: NormalizedError,
  latencyMs: Schema.Finite,
  cancellation: Schema.Struct({ dispatchMayHaveBegun: Schema.Boolean })
})

export const ExecutionRecord = Schema.Union([
  PendingExecution,
  RunningExecution,
  SucceededExecution,
  FailedExecution,
  CancelledExecution
])
export type ExecutionRecord = typeof ExecutionRecord.Type

/** A terminal record (spec: succeeded, failed or cancelled), as a sync execute's 200 carries. */
export const TerminalExecution = Schema.Union([SucceededExecution, FailedExecution, CancelledExecution])
export type TerminalExecution = typeof TerminalExecution.Type

export const ExecutionPage = Schema.Struct({
  executions: Schema.Array(ExecutionRecord),
  nextCursor: Schema.optionalKey(Schema.String)
})
export type ExecutionPage = typeof ExecutionPage.Type
