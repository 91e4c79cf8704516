/**
 * tasks/get, tasks/result and tasks/cancel (decisions.md section 7): a task is an execution of
 * the session's project that this session created (Tasks.ts); its state is the execution's. A
 * refused call's task has no execution: it failed at once, and its result is the refusal.
 * Answered the same whether the request came through the SDK `Server` (RpcServer.ts) or the
 * gateway's plain path (FastPath.ts).
 */
import { Clock, Effect } from "effect"
import type { Executions } from "../infra/executions/Executions.ts"
import type { McpSession } from "./McpSessions.ts"
import { INVALID_PARAMS, REQUEST_CANCELLED, RpcFailure } from "./RpcFailure.ts"
import { isTerminal, refusedTaskOf, taskOf, type TasksShape } from "./Tasks.ts"
import { errorResult, recordResult, withRelatedTask } from "./ToolResults.ts"

const taskNotFound = (taskId: string) => new RpcFailure({ code: INVALID_PARAMS, message: `Task not found: ${taskId}` })

const alreadyEnded = (taskId: string, status: string) =>
  new RpcFailure({ code: INVALID_PARAMS, message: `Cannot cancel task ${taskId}: it is already ${status}.` })

export const makeTaskRequests = (executions: Executions["Service"], tasks: TasksShape) => {
  const binding = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const found = yield* tasks.find(session, taskId)
    if (found === undefined) return yield* taskNotFound(taskId)
    return found
  })
  const recordOf = (session: McpSession, taskId: string) =>
    Effect.mapError(executions.get(session.projectId, undefined, taskId), () => taskNotFound(taskId))

  /** tasks/get: the task as it stands. */
  const get = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const task = yield* binding(session, taskId)
    if (task.refusal !== undefined) return refusedTaskOf(task, task.refusal)
    return taskOf(task, yield* recordOf(session, taskId))
  })

  /** tasks/result: waits for the task's end (within its time to live) and answers its tool result. */
  const result = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const task = yield* binding(session, taskId)
    if (task.refusal !== undefined) return withRelatedTask(errorResult(task.refusal), taskId)
    const record = yield* recordOf(session, taskId)
    const left = task.createdMs + task.ttlMs - (yield* Clock.currentTimeMillis)
    const final = isTerminal(record)
      ? record
      : yield* Effect.mapError(executions.awaitTerminal(session.projectId, undefined, taskId, Math.max(0, left)), () => taskNotFound(taskId))
    if (!isTerminal(final)) {
      // Within its time to live the wait was cut short (the process stops): the task goes on,
      // readable on another instance or after a restart, so it is no "expired" a client takes as final.
      if ((yield* Clock.currentTimeMillis) < task.createdMs + task.ttlMs) return yield* new RpcFailure(REQUEST_CANCELLED)
      return yield* new RpcFailure({ code: INVALID_PARAMS, message: `Task ${taskId} expired before it finished.` })
    }
    return withRelatedTask(recordResult(final), taskId)
  })

  /** tasks/cancel: cancels the execution, or says which end it reached first. */
  const cancel = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const task = yield* binding(session, taskId)
    if (task.refusal !== undefined) return yield* alreadyEnded(taskId, "failed")
    const record = yield* recordOf(session, taskId)
    if (isTerminal(record)) return yield* alreadyEnded(taskId, taskOf(task, record).status)
    const cancelled = yield* executions.cancel(session.projectId, undefined, taskId).pipe(
      // Lost the race to success or failure downstream.
      Effect.catchTag("StateConflict", () =>
        Effect.flatMap(Effect.orDie(executions.get(session.projectId, undefined, taskId)), (now) => Effect.fail(alreadyEnded(taskId, taskOf(task, now).status)))),
      Effect.catchTag("NotFound", () => Effect.fail(taskNotFound(taskId)))
    )
    if (cancelled.status !== "cancelled") return yield* alreadyEnded(taskId, taskOf(task, cancelled).status)
    return taskOf(task, cancelled)
  })

  return { get, result, cancel }
}

export type TaskRequests = ReturnType<typeof makeTaskRequests>
