/**
 * The MCP gateway (spec, "MCP gateway"; decisions.md section 7): `McpGateway.handle` serves
 * POST, GET and DELETE `/mcp`; the HTTP server mounts it and the composition root adds `layer`
 * and `migrations` to its lists. Nothing else leaves this folder.
 *
 * The layer needs the features it runs on (keys, rate limits, executions, connections, the event
 * log and the storage choice) and provides its own parts: the sessions store (memory or
 * Postgres), the log follower, tasks, tool calls and GET streams.
 */
import { Effect, Layer } from "effect"
import { ApiKeys } from "../infra/access/ApiKeys.ts"
import { Secrets } from "../infra/access/Secrets.ts"
import { RateLimiter } from "../infra/access/RateLimiter.ts"
import { Connections as ConnectionsService } from "../infra/connections/Connections.ts"
import { EventStore } from "../infra/eventlog/EventStore.ts"
import { ViewStore } from "../infra/eventlog/ViewStore.ts"
import type { Migration } from "../infra/eventlog/PgMigrations.ts"
import type { Projection } from "../infra/eventlog/Projection.ts"
import { Executions as ExecutionsService } from "../infra/executions/Executions.ts"
import { makeCallCancels } from "./CallCancels.ts"
import { makeEventIds } from "./EventIds.ts"
import { makeLogFeed, MCP_TASK_STREAM_TYPE } from "./LogFeed.ts"
import { makeHandle, McpGateway } from "./McpGateway.ts"
import { McpSessions } from "./McpSessions.ts"
import { mcpSettings } from "./McpSettings.ts"
import * as PgMcpSessions from "./PgMcpSessions.ts"
import { makeExchange } from "./RpcExchange.ts"
import { makeRpcServers } from "./RpcServer.ts"
import { makeSessionStreams } from "./SessionStream.ts"
import { makeTasks } from "./Tasks.ts"
import { openTasksProjection } from "./OpenTasks.ts"
import { makeTaskRequests } from "./TaskRequests.ts"
import { makeFastPath } from "./FastPath.ts"
import { makeToolCalls } from "./ToolCalls.ts"
import * as Access from "../infra/access/index.ts"
import * as Connections from "../infra/connections/index.ts"
import * as Eventlog from "../infra/eventlog/index.ts"
import * as Executions from "../infra/executions/index.ts"

export { McpGateway } from "./McpGateway.ts"

export const layer = Layer.effect(
  McpGateway,
  Effect.gen(function*() {
    const settings = yield* mcpSettings
    const keys = yield* ApiKeys
    const limiter = yield* RateLimiter
    const sessions = yield* McpSessions
    const executions = yield* ExecutionsService
    const connections = yield* ConnectionsService
    const store = yield* EventStore
    const context = yield* Effect.context<never>()
    const ids = makeEventIds(yield* Secrets)
    const feed = yield* makeLogFeed
    const tasks = yield* makeTasks(store, executions, feed, yield* ViewStore)
    const cancels = makeCallCancels()
    const toolCalls = makeToolCalls({ settings, executions, limiter, tasks, feed, cancels })
    const taskRequests = makeTaskRequests(executions, tasks)
    const servers = makeRpcServers({ settings, connections, taskRequests, toolCalls, context })
    const exchange = makeExchange(servers, feed, ids)
    const fast = makeFastPath({ toolCalls, taskRequests, track: exchange.track })
    const streams = makeSessionStreams({ store, feed, sessions, connections, settings, context, ids })
    // On shutdown, open GET streams and running requests end, so the server can drain.
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      streams.endAll()
      exchange.closeAll()
    }))
    return McpGateway.of({ handle: makeHandle({ settings, keys, limiter, sessions, feed, exchange, streams, fast, cancels, ids }) })
  })
).pipe(
  Layer.provide(PgMcpSessions.layer),
  Layer.provide([Access.layer, Executions.layer, Connections.layer, Eventlog.layer])
)

/** The gateway's schema (the `mcp_sessions` table), for the composition root's migration list. */
export const migrations: ReadonlyArray<Migration> = PgMcpSessions.mcpMigrations
export const projections: ReadonlyArray<Projection> = [openTasksProjection]
export const streamTypes: ReadonlyArray<string> = [MCP_TASK_STREAM_TYPE]
