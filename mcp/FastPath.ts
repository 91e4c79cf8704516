/**
 * The gateway's common requests without the SDK's per-request machinery: a `tools/call` (with or
 * without a task), `tasks/get`, `tasks/result` and `tasks/cancel`, each one JSON-RPC request
 * answered as JSON (the client did not ask for SSE) with no progress token, so no notification
 * can belong to it. They run straight through ToolCalls.ts and TaskRequests.ts, the same
 * handlers the SDK `Server` calls (RpcServer.ts), and their JSON-RPC answer is written here.
 * Anything else goes through the SDK; params the method's schema refuses never reach either
 * (the gateway answers -32602, MessageRules.ts).
 *
 * Like a request the SDK serves, each is tracked by the exchange (RpcExchange.ts) while it runs:
 * `notifications/cancelled` naming its id, or the process stopping, ends it with the answer the
 * SDK path gives a cancelled request.
 *
 * Why: a `Server` and a transport per request, the SDK's promise hops and its validation of the
 * message cost the gateway about six times the CPU of `POST /v1/execute` for the same execution
 * (bench/scenarios/mcp.ts under wrk: 1,323-1,423 calls/s against 9,152-9,417 executes/s).
 */
import { Effect, type Scope } from "effect"
import {
  type CallToolRequest,
  type CancelTaskRequest,
  ErrorCode,
  type GetTaskPayloadRequest,
  type GetTaskRequest
} from "@modelcontextprotocol/sdk/types.js"
import { type JsonAnswer, jsonResponse, type RpcId } from "./HttpAnswers.ts"
import type { McpSession } from "./McpSessions.ts"
import { REQUEST_CANCELLED, type RpcFailure } from "./RpcFailure.ts"
import { argumentsAsSent, keepsTasks } from "./RpcExchange.ts"
import type { TaskRequests } from "./TaskRequests.ts"
import type { makeToolCalls } from "./ToolCalls.ts"
import { isJsonObject } from "../domain/JsonObject.ts"
import { isStoreOutage } from "../infra/eventlog/StoreOutage.ts"


const answer = (body: unknown) => jsonResponse(JSON.stringify(body), 200)


export interface FastPathParts {
  readonly toolCalls: ReturnType<typeof makeToolCalls>
  readonly taskRequests: TaskRequests
  /** The exchange's tracking of running requests (RpcExchange.ts). */
  readonly track: (sessionId: string, id: Exclude<RpcId, null>, close: () => void) => () => void
}

/**
 * The answer to `body` when it is one of the plain requests above; undefined for the SDK path.
 * `parsed` is what the method's schema made of it (the gateway checked its params already,
 * MessageRules.ts): the id is read from `body`, the params from `parsed`.
 */
export type FastPath = (body: unknown, parsed: unknown, session: McpSession, headerUserId: string | undefined) => Effect.Effect<JsonAnswer> | undefined

export const makeFastPath = ({ taskRequests, toolCalls, track }: FastPathParts): FastPath => {
  /** The JSON-RPC answer of `result`, ended early by a cancel of `id`. */
  const respond = <A>(session: McpSession, id: Exclude<RpcId, null>, result: Effect.Effect<A, RpcFailure, Scope.Scope>) => {
    const cancelled = Effect.callback<JsonAnswer>((resume) => {
      const untrack = track(session.sessionId, id, () => resume(Effect.succeed(answer({ jsonrpc: "2.0", id, error: REQUEST_CANCELLED }))))
      return Effect.sync(untrack)
    })
    const answered = result.pipe(
      Effect.map((value) => answer({ jsonrpc: "2.0", id, result: value })),
      Effect.catchTag("RpcFailure", (failure) => Effect.succeed(answer({ jsonrpc: "2.0", id, error: { code: failure.code, message: failure.message } }))),
      Effect.catchDefect((defect) =>
        // The store away is the gateway's to answer (503 with Retry-After, McpGateway.ts).
        isStoreOutage(defect) ? Effect.die(defect) : Effect.as(
          Effect.logError("MCP request failed", defect),
          answer({ jsonrpc: "2.0", id, error: { code: ErrorCode.InternalError, message: "Internal error." } })
        )
      ),
      Effect.scoped
    )
    return Effect.raceFirst(answered, cancelled)
  }

  const toolCall = (request: CallToolRequest, sent: unknown, id: Exclude<RpcId, null>, session: McpSession, headerUserId: string | undefined) => {
    const params = request.params
    if (params._meta?.progressToken !== undefined) return undefined
    // Dropped where the SDK path drops it (RpcExchange.ts).
    const task = keepsTasks(session) ? params.task : undefined
    const called = toolCalls.call({
      session,
      headerUserId,
      requestId: id,
      name: params.name,
      arguments: argumentsAsSent(sent) ?? params.arguments,
      task,
      meta: params._meta,
      notify: () => Effect.void
    })
    return respond(session, id, Effect.map(called, (done) => ("task" in done ? { task: done.task } : done.result)))
  }

  return (body, parsed, session, headerUserId) => {
    if (!isJsonObject(body) || !(typeof body.id === "string" || typeof body.id === "number")) return undefined
    const id = body.id
    switch (body.method) {
      case "tools/call":
        return toolCall(parsed as CallToolRequest, body, id, session, headerUserId)
      case "tasks/get":
        return respond(session, id, taskRequests.get(session, (parsed as GetTaskRequest).params.taskId))
      case "tasks/result":
        return respond(session, id, taskRequests.result(session, (parsed as GetTaskPayloadRequest).params.taskId))
      case "tasks/cancel":
        return respond(session, id, taskRequests.cancel(session, (parsed as CancelTaskRequest).params.taskId))
      default:
        return undefined
    }
  }
}
