/**
 * tools/call (spec, "MCP gateway"; decisions.md section 7). Every call that runs a tool goes
 * through `Executions.execute`, the same path as `POST /v1/execute`: validation, connections,
 * idempotency, concurrency caps and the record are the executor's, never re-implemented here.
 *
 * - A plain call of an ordinary tool executes sync and answers the terminal record; a tool that
 *   is async by nature executes async and the call waits for its terminal record
 *   (`Executions.awaitTerminal`), negotiated or not.
 * - `task: {ttl}` executes async and answers only the task (Tasks.ts).
 * - Every call that creates an execution carries an idempotency key: `_meta`'s, else
 *   `mcp:<session id>:<json-rpc id>`, so a client that resends a call after a lost answer gets
 *   the first execution back.
 * - Failures (bad arguments, no user, a connection problem, rate limits, any normalized error)
 *   are `isError` results (ToolResults.ts), or failed tasks with that result when the call asked
 *   for a task (Tasks.ts); an unknown tool is JSON-RPC -32602, and a task
 *   request that the tool's listed `taskSupport` forbids (or a plain call it requires) -32601.
 */
import { Effect, Schema, type Scope } from "effect"
import type { ToolDefinition } from "../domain/catalog/Catalog.ts"
import { decodeClosed, findTool } from "../domain/catalog/index.ts"
import { unknownToolMessage } from "../infra/executions/Executions.ts"
import { normalized, toNormalized, type NormalizedError } from "../domain/Errors.ts"
import { AttachmentIds, IdempotencyKeyText, MAX_ATTACHMENTS } from "../domain/executions/ExecuteFields.ts"
import type { ExecutionRecord } from "../domain/executions/ExecutionRecord.ts"
import type { RateLimiterShape } from "../infra/access/RateLimiter.ts"
import { rateLimitedError, takeTokens } from "../infra/access/Throttle.ts"
import type { ExecuteCommand, Executions } from "../infra/executions/Executions.ts"
import type { CallCancels } from "./CallCancels.ts"
import { callUser } from "./Identity.ts"
import type { LogFeedShape } from "./LogFeed.ts"
import type { McpSession } from "./McpSessions.ts"
import type { McpSettingsShape } from "./McpSettings.ts"
import { RpcFailure } from "./RpcFailure.ts"
import type { Notification, ProgressToken } from "./TaskEvents.ts"
import { followStages, isTerminal, progressNotification, type Task, type TasksShape } from "./Tasks.ts"
import { EXECUTE_TOOL, SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, SEARCH_TOOL, searchTools } from "./ToolCatalog.ts"
import {
  CONNECTION_META,
  errorResult,
  IDEMPOTENCY_META,
  recordResult,
  successResult,
  type ToolResult,
  USER_META
} from "./ToolResults.ts"

/** Files the call's execution may read (an extension: the spec shows no MCP attachment field). */
export const ATTACHMENTS_META = "dev.service/attachments"

export interface CallRequest {
  readonly session: McpSession
  /** This request's `X-Service-User-Id`, when it has one. */
  readonly headerUserId: string | undefined
  readonly requestId: string | number
  readonly name: string
  readonly arguments: unknown
  readonly task: { readonly ttl?: number | undefined } | undefined
  readonly meta: unknown
  /** Sends a notification related to this request (on its response stream, when it has one). */
  readonly notify: (notification: Notification) => Effect.Effect<void>
}

export type CallAnswer = { readonly result: ToolResult } | { readonly task: Task }

const SearchArguments = Schema.Struct({
  query: Schema.String,
  limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: SEARCH_MAX_LIMIT })))
})
const decodeSearch = decodeClosed(SearchArguments, `Invalid arguments for ${SEARCH_TOOL}`)

const ExecuteArguments = Schema.Struct({
  name: Schema.String,
  input: Schema.optionalKey(Schema.Record(Schema.String, Schema.Json))
})
const decodeExecute = decodeClosed(ExecuteArguments, `Invalid arguments for ${EXECUTE_TOOL}`)

const CallMeta = Schema.Struct({
  [USER_META]: Schema.optionalKey(Schema.String),
  [CONNECTION_META]: Schema.optionalKey(Schema.String),
  // As on POST /v1/execute.
  [IDEMPOTENCY_META]: Schema.optionalKey(IdempotencyKeyText),
  [ATTACHMENTS_META]: Schema.optionalKey(AttachmentIds),
  progressToken: Schema.optionalKey(Schema.Union([Schema.String, Schema.Number]))
})
type CallMeta = typeof CallMeta.Type
// Other keys (the related-task key, clients' own) are left alone.
const decodeMeta = (meta: unknown) =>
  Effect.mapError(
    Schema.decodeUnknownEffect(CallMeta)(meta ?? {}),
    () =>
      normalized(
        "invalid_input",
        `The dev.service/* _meta values must be strings (the idempotency key of 1 to 255 characters, no control characters; attachments: an array of at most ${MAX_ATTACHMENTS} file ids).`
      )
  )

const fail = (error: NormalizedError) => Effect.fail(error)

/**
 * Progress of a sync call, which is terminal when it answers: the stages its record shows
 * (queued, running when it started, and its outcome), sent before the result.
 */
const reportStages = (token: ProgressToken | undefined, request: CallRequest, record: ExecutionRecord) =>
  token === undefined
    ? Effect.void
    : Effect.forEach(
      [{ ...record, status: "pending" as const }, ...(record.startedAt !== undefined ? [{ ...record, status: "running" as const }] : []), ...(isTerminal(record) ? [record] : [])],
      (stage) => request.notify(progressNotification(token, stage)),
      { discard: true }
    )

const search = (request: CallRequest) =>
  Effect.map(Effect.result(decodeSearch(request.arguments ?? {})), (args) =>
    args._tag === "Failure"
      ? errorResult(toNormalized(args.failure))
      : successResult({ tools: searchTools(args.success.query, args.success.limit ?? SEARCH_DEFAULT_LIMIT) }))

export const makeToolCalls = (deps: {
  readonly settings: McpSettingsShape
  readonly executions: Executions["Service"]
  readonly limiter: RateLimiterShape
  readonly tasks: TasksShape
  readonly feed: LogFeedShape
  readonly cancels: CallCancels
}) => {
  const { cancels, executions, feed, limiter, tasks } = deps

  /** The execute bucket and the daily quota, after the standard token the request took. */
  const takeExecuteTokens = (projectId: string) =>
    Effect.flatMap(takeTokens(limiter, projectId, true), (decision) => decision.allowed ? Effect.void : fail(rateLimitedError(decision, true)))

  /** Waits for the terminal record of an async execution, reporting running on the way. */
  const waitFor = (tool: ToolDefinition, request: CallRequest, token: ProgressToken | undefined, record: ExecutionRecord) =>
    Effect.gen(function*() {
      // Every stage up to the record's (a plain call that took its permit is running already).
      yield* reportStages(token, request, record)
      const progress = token === undefined
        ? Effect.never
        : Effect.scoped(followStages(feed, executions, record, (next) => isTerminal(next) ? Effect.void : request.notify(progressNotification(token, next))))
      const waited = executions.awaitTerminal(request.session.projectId, undefined, record.executionId, tool.timeoutMs + 60_000)
      const done = yield* Effect.raceFirst(Effect.orDie(waited), Effect.andThen(progress, Effect.never))
      if (token !== undefined && isTerminal(done)) yield* request.notify(progressNotification(token, done))
      return done
    })

  const run = Effect.fnUntraced(function*(tool: ToolDefinition, input: unknown, request: CallRequest, meta: CallMeta) {
    const user = callUser(request.session.userId, request.headerUserId, meta[USER_META], request.session.pinnedUserId)
    if (!("userId" in user)) return yield* fail(toNormalized(user))
    const command: ExecuteCommand = {
      projectId: request.session.projectId,
      userId: user.userId,
      tool: tool.name,
      input: input ?? {},
      // A plain call is a synchronous request, also of a tool async by nature (which the
      // executor runs async): a full concurrency cap refuses it before allocation.
      mode: request.task === undefined ? "sync" : "async",
      connectionId: meta[CONNECTION_META],
      attachments: meta[ATTACHMENTS_META],
      idempotencyKey: meta[IDEMPOTENCY_META] ?? `mcp:${request.session.sessionId}:${String(request.requestId)}`,
      // Answered as created: the call waits below, where a cancel of the request reaches it.
      syncWaitMs: 0
    }
    const { record } = yield* Effect.mapError(executions.execute(command), toNormalized)
    const token = meta.progressToken
    if (request.task !== undefined) return { task: yield* tasks.open(request.session, record, request.task.ttl, token) }
    if (isTerminal(record)) {
      yield* reportStages(token, request, record)
      return { result: recordResult(record) }
    }
    yield* cancels.register(request.session.sessionId, request.requestId, Effect.ignore(executions.cancel(request.session.projectId, undefined, record.executionId)))
    return { result: recordResult(yield* waitFor(tool, request, token, record)) }
  })

  /** The tool a call names, directly or through service.execute_tool, with its input. */
  const target = Effect.fnUntraced(function*(request: CallRequest) {
    if (request.name !== EXECUTE_TOOL) {
      const tool = findTool(request.name)
      if (tool === undefined) return yield* new RpcFailure({ code: -32602, message: `Unknown tool: ${request.name}` })
      return { tool, input: request.arguments, via: undefined }
    }
    const args = yield* Effect.result(decodeExecute(request.arguments ?? {}))
    if (args._tag === "Failure") return { problem: toNormalized(args.failure) }
    if (args.success.name === SEARCH_TOOL || args.success.name === EXECUTE_TOOL) {
      return { problem: normalized("invalid_input", `${EXECUTE_TOOL} runs catalog tools; call ${args.success.name} directly.`) }
    }
    const tool = findTool(args.success.name)
    if (tool === undefined) return { problem: normalized("invalid_input", unknownToolMessage(args.success.name)) }
    return { tool, input: args.success.input ?? {}, via: EXECUTE_TOOL }
  })

  /** Answers one tools/call. */
  const call = Effect.fnUntraced(function*(request: CallRequest): Effect.fn.Return<CallAnswer, RpcFailure, Scope.Scope> {
    const tasksOn = request.session.tasks
    if (request.task !== undefined && !tasksOn) {
      return yield* new RpcFailure({ code: -32601, message: "Tasks were not negotiated in this session." })
    }
    if (request.name === SEARCH_TOOL) {
      if (request.task !== undefined) return yield* new RpcFailure({ code: -32601, message: `${SEARCH_TOOL} does not run as a task.` })
      return { result: yield* search(request) }
    }
    const found = yield* target(request)
    if (!("problem" in found) && tasksOn && found.via === undefined && found.tool.asyncByNature && request.task === undefined) {
      return yield* new RpcFailure({ code: -32601, message: `${found.tool.name} runs only as a task (taskSupport: required).` })
    }
    // A call of a catalog tool or of service.execute_tool is an execution request (decisions 7):
    // it takes an execute token before its arguments, user or _meta are judged, as
    // POST /v1/execute does before its body.
    return yield* Effect.gen(function*() {
      yield* takeExecuteTokens(request.session.projectId)
      if ("problem" in found) return yield* fail(found.problem)
      const meta = yield* decodeMeta(request.meta)
      return yield* run(found.tool, found.input, request, meta)
    }).pipe(Effect.catch((error: NormalizedError) => refused(request, error)))
  })

  /**
   * A call refused before any execution existed: an `isError` result, or, when it asked for a
   * task, a task that failed at once with that result (MCP answers a task request with a task).
   */
  const refused = (request: CallRequest, error: NormalizedError): Effect.Effect<CallAnswer> =>
    request.task === undefined
      ? Effect.succeed({ result: errorResult(error) })
      : Effect.map(tasks.refuse(request.session, error, request.task.ttl), (task) => ({ task }))

  return { call }
}
