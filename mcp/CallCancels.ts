/**
 * What `notifications/cancelled` cancels beyond the request itself: the execution a plain
 * `tools/call` started and is waiting for (MCP 2025-11-25, "Cancellation": the receiver SHOULD
 * stop processing the cancelled request). The call registers its execution's cancel while it
 * waits (ToolCalls.ts); a cancel notification of its session naming its JSON-RPC id runs it.
 *
 * Only an explicit notification cancels an execution: a client that goes away, or a process
 * that stops, ends the request alone, so a resent call still finds its execution by its
 * idempotency key. Like the request it names, the registration lives in the process running the
 * call. A task's execution is cancelled by `tasks/cancel` instead (MCP forbids cancelling a
 * task-augmented request with the notification).
 */
import { Effect, type Scope } from "effect"

type RpcId = string | number

const keyOf = (sessionId: string, id: RpcId) => `${sessionId} ${typeof id} ${id}`

export interface CallCancels {
  /** Makes `cancel` run when the session cancels request `id`, for as long as the scope is open. */
  readonly register: (sessionId: string, id: RpcId, cancel: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
  /**
   * Takes the registered cancels of `ids` in the session at once (each runs once) and answers
   * them as one effect, to run once the requests have ended: a cancelled request is not answered
   * with its cancelled execution (MCP: no response to a cancelled request).
   */
  readonly take: (sessionId: string, ids: ReadonlyArray<RpcId>) => Effect.Effect<void>
}

export const makeCallCancels = (): CallCancels => {
  const registered = new Map<string, Effect.Effect<void>>()
  return {
    register: (sessionId, id, cancel) => {
      const key = keyOf(sessionId, id)
      return Effect.acquireRelease(
        Effect.sync(() => void registered.set(key, cancel)),
        () => Effect.sync(() => void (registered.get(key) === cancel && registered.delete(key)))
      )
    },
    take: (sessionId, ids) => {
      const taken = ids.flatMap((id) => {
        const key = keyOf(sessionId, id)
        const cancel = registered.get(key)
        registered.delete(key)
        return cancel === undefined ? [] : [cancel]
      })
      return Effect.all(taken, { discard: true })
    }
  }
}
