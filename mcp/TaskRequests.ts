/**
 * tasks/get, tasks/result and tasks/cancel (decisions.md section 7): a task is an execution of
 * the session's project that this session created (Tasks.ts); its state is the execution's.
 * Answered the same whether the request came through the SDK `Server` (RpcServer.ts) or the
 * gateway's plain path (FastPath.ts).
 */
import { Clock, Effect } from "effect"
import type { Executions } from "../infra/executions/Executions.ts"
import type { McpSession } from "./McpSessions.ts"
import { INVALID_PARAMS, RpcFailure } from "./RpcFailure.ts"
import { isTerminal, taskOf, type TasksShape } from "./Tasks.ts"
import { recordResult, withRelatedTask } from "./ToolResults.ts"

const taskNotFound = (taskId: string) => new RpcFailure({ code: INVALID_PARAMS, message: `Task not found: ${taskId}` })

export const makeTaskRequests = (executions: Executions["Service"], tasks: TasksShape) => {
  const find = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const binding = yield* tasks.find(session, taskId)
    if (binding === undefined) return yield* taskNotFound(taskId)
    const record = yield* Effect.mapError(executions.get(session.projectId, undefined, taskId), () => taskNotFound(taskId))
    return { binding, record }
  })

  /** tasks/get: the task as it stands. */
  const get = (session: McpSession, taskId: string) => Effect.map(find(session, taskId), ({ binding, record }) => taskOf(binding, record))

  /** tasks/result: waits for the task's end (within its time to live) and answers its tool result. */
  const result = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const { binding, record } = yield* find(session, taskId)
    const left = binding.createdMs + binding.ttlMs - (yield* Clock.currentTimeMillis)
    const final = isTerminal(record)
      ? record
      : yield* Effect.mapError(executions.awaitTerminal(session.projectId, undefined, taskId, Math.max(0, left)), () => taskNotFound(taskId))
    if (!isTerminal(final)) return yield* new RpcFailure({ code: INVALID_PARAMS, message: `Task ${taskId} expired before it finished.` })
    return withRelatedTask(recordResult(final), taskId)
  })

  /** tasks/cancel: cancels the execution, or says which end it reached first. */
  const cancel = Effect.fnUntraced(function*(session: McpSession, taskId: string) {
    const { binding, record } = yield* find(session, taskId)
    const terminal = (status: string) =>
      new RpcFailure({ code: INVALID_PARAMS, message: `Cannot cancel task ${taskId}: it is already ${status}.` })
    if (isTerminal(record)) return yield* terminal(taskOf(binding, record).status)
    const cancelled = yield* executions.cancel(session.projectId, undefined, taskId).pipe(
      // Lost the race to success or failure downstream.
      Effect.catchTag("StateConflict", () =>
        Effect.flatMap(Effect.orDie(executions.get(session.projectId, undefined, taskId)), (now) => Effect.fail(terminal(taskOf(binding, now).status)))),
      Effect.catchTag("NotFound", () => Effect.fail(taskNotFound(taskId)))
    )
    if (cancelled.status !== "cancelled") return yield* terminal(taskOf(binding, cancelled).status)
    return taskOf(binding, cancelled)
  })

  return { get, result, cancel }
}

export type TaskRequests = ReturnType<typeof makeTaskRequests>
