/**
 * The JSON-RPC side of one request: a low-level SDK `Server` whose handlers are the gateway's.
 *
 * Why the low-level `Server`: `McpServer` marks every tool `taskSupport: "forbidden"` whatever
 * was negotiated, and the SDK's own task handlers poll a task store, neither abort nor notify on
 * cancel, and answer a lost cancel race with -32600. Here tasks/get, tasks/result and
 * tasks/cancel are the executions' (Tasks.ts): tasks/result waits with `awaitTerminal`.
 *
 * Why one per request: a `Server` holds one transport, and the session lives in a row, not in
 * the process (McpGateway.ts), so each request builds a `Server` over that row. A `Server` and its
 * transport, connected and closed, measured 15 us here (handlers are closures over services made
 * once); the SDK's default JSON-schema validator, an Ajv instance used only for elicitation,
 * would add 380 us a request, so it is replaced by one that is never called.
 */
import { Cause, Clock, Effect, Exit, type Context, type Scope } from "effect"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  InitializeRequestSchema,
  ListToolsRequestSchema,
  type ServerCapabilities
} from "@modelcontextprotocol/sdk/types.js"
import { catalogVersion, findToolkit } from "../domain/catalog/index.ts"
import { isExpired, needsConnection } from "../domain/Connection.ts"
import type { ConnectionsShape } from "../infra/connections/Connections.ts"
import type { McpSession } from "./McpSessions.ts"
import type { McpSettingsShape } from "./McpSettings.ts"
import { INVALID_PARAMS, REQUEST_CANCELLED, RpcFailure } from "./RpcFailure.ts"
import type { TaskRequests } from "./TaskRequests.ts"
import type { Notification } from "./TaskEvents.ts"
import type { makeToolCalls } from "./ToolCalls.ts"
import { listFor } from "./ToolCatalog.ts"
import { causeIsStoreOutage, storeUnavailableAnswer } from "../infra/eventlog/StoreOutage.ts"

export const LATEST_VERSION = "2025-11-25"

/** What initialize answers: tasks only at 2025-11-25 (older versions have none). */
export const capabilitiesFor = (protocolVersion: string): ServerCapabilities => ({
  tools: { listChanged: true },
  ...(protocolVersion >= LATEST_VERSION ? { tasks: { cancel: {}, requests: { tools: { call: {} } } } } : {})
})

const SERVER_INFO = { name: "service", title: "Service MCP gateway", version: catalogVersion }

/** True in both discovery modes: catalog mode lists the provider tools too, search mode only the two. */
const INSTRUCTIONS = "Tools run as executions of the service's catalog. Call a tool that tools/list lists, or find one " +
  "with service.search_tools and run it by name with service.execute_tool. Results carry _meta[\"dev.service/execution\"]."

/** Never called: the gateway sends no elicitation, the only use of the SDK's validator. */
const noValidator = {
  getValidator: () => () => ({ valid: false as const, data: undefined, errorMessage: "validation is not used" })
}

export interface RpcDeps {
  readonly settings: McpSettingsShape
  readonly connections: ConnectionsShape
  readonly taskRequests: TaskRequests
  readonly toolCalls: ReturnType<typeof makeToolCalls>
  /** The context handlers run in (the gateway's, as its layer was built). */
  readonly context: Context.Context<never>
}

/**
 * An error the SDK answers as the JSON-RPC error `{code, message}`. Not an `McpError`, whose
 * message carries an "MCP error <code>: " prefix that the answers the gateway writes itself
 * (FastPath.ts) do not have: one error reads the same whichever path answered it.
 */
const rpcError = (code: number, message: string) => Object.assign(new Error(message), { code })

/** Runs a handler's effect; failures become JSON-RPC errors, defects an internal error. */
const runWith = (context: Context.Context<never>) => {
  const run = Effect.runPromiseExitWith(context)
  return async <A>(effect: Effect.Effect<A, RpcFailure, Scope.Scope>, signal: AbortSignal): Promise<A> => {
    const exit = await run(Effect.scoped(effect), { signal })
    if (Exit.isSuccess(exit)) return exit.value
    for (const reason of exit.cause.reasons) {
      if (Cause.isFailReason(reason)) throw rpcError(reason.error.code, reason.error.message)
    }
    if (Cause.hasInterruptsOnly(exit.cause)) throw rpcError(REQUEST_CANCELLED.code, REQUEST_CANCELLED.message)
    if (causeIsStoreOutage(exit.cause)) {
      // The store went away while the request ran (an outage found before it is the gateway's
      // 503): an answer is under way on this path, so a JSON-RPC error that says so, and a warning.
      const { error } = storeUnavailableAnswer()
      await Effect.runPromiseWith(context)(Effect.logWarning("MCP handler met the store unavailable", exit.cause))
      throw Object.assign(rpcError(ErrorCode.InternalError, error.message), { data: { "dev.service/error": error } })
    }
    await Effect.runPromiseWith(context)(Effect.logError("MCP handler failed", exit.cause))
    throw rpcError(ErrorCode.InternalError, "Internal error.")
  }
}

export interface RequestFacts {
  readonly session: McpSession
  readonly headerUserId: string | undefined
  /** The arguments of the body's `tools/call` requests as sent, by id (RpcExchange.ts `argumentsAsSent`). */
  readonly sentArguments?: ReadonlyMap<string | number, unknown>
}

export const makeRpcServers = (deps: RpcDeps) => {
  const { connections, settings, taskRequests, toolCalls } = deps
  const run = runWith(deps.context)

  /** Toolkits the session's user may use in catalog mode: no connection needed, or a live one. */
  const usableToolkits = Effect.fnUntraced(function*(projectId: string, userId: string | undefined) {
    if (settings.tools === "search" || userId === undefined) return () => true
    const now = yield* Clock.currentTimeMillis
    const connected = new Set<string>()
    let after: string | undefined
    for (let page = 0; page < 100; page++) {
      const { connections: items, hasMore } = yield* connections.list({ projectId, userId, limit: 100, after })
      for (const c of items) if (!isExpired(c.expiresAt, now)) connected.add(c.toolkit)
      after = items.at(-1)?.connectionId
      if (!hasMore || after === undefined) break
    }
    return (toolkit: string) => {
      const manifest = findToolkit(toolkit)
      return manifest !== undefined && (!needsConnection(manifest) || connected.has(toolkit))
    }
  })

  /** A `Server` answering one request of `facts.session`. */
  return (facts: RequestFacts): Server => {
    const { session } = facts
    const server = new Server(SERVER_INFO, {
      capabilities: capabilitiesFor(LATEST_VERSION),
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: noValidator
    })
    server.setRequestHandler(InitializeRequestSchema, () => ({
      protocolVersion: session.protocolVersion,
      capabilities: capabilitiesFor(session.protocolVersion),
      serverInfo: SERVER_INFO,
      instructions: INSTRUCTIONS
    }))
    // One page, so no cursor is valid (MCP "Pagination": an invalid cursor SHOULD be -32602).
    server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
      run(
        request.params?.cursor !== undefined
          ? Effect.fail(new RpcFailure({ code: INVALID_PARAMS, message: "Invalid cursor: tools/list answers every tool in one page and issues no cursor." }))
          : Effect.map(usableToolkits(session.projectId, session.userId ?? facts.headerUserId), (usable) => ({
            tools: [...listFor(settings.tools, session.tasks, usable)]
          })),
        extra.signal
      ))
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      // Progress of this call, on its response stream; lost with it when the client has gone.
      const notify = (notification: Notification) =>
        Effect.tryPromise(() => extra.sendNotification(notification as Parameters<typeof extra.sendNotification>[0])).pipe(Effect.ignore)
      return run(
        Effect.map(toolCalls.call({
          session,
          headerUserId: facts.headerUserId,
          requestId: extra.requestId,
          name: request.params.name,
          arguments: facts.sentArguments?.get(extra.requestId) ?? request.params.arguments,
          task: request.params.task,
          meta: request.params._meta,
          notify
        }), (answer) => ("task" in answer ? { task: answer.task } : answer.result)),
        extra.signal
      )
    })
    server.setRequestHandler(GetTaskRequestSchema, (request, extra) => run(taskRequests.get(session, request.params.taskId), extra.signal))
    server.setRequestHandler(GetTaskPayloadRequestSchema, (request, extra) => run(taskRequests.result(session, request.params.taskId), extra.signal))
    server.setRequestHandler(CancelTaskRequestSchema, (request, extra) => run(taskRequests.cancel(session, request.params.taskId), extra.signal))
    return server
  }
}
