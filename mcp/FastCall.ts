/**
 * The gateway's common case without the SDK's per-request machinery: one plain `tools/call`
 * answered as JSON (the client did not ask for SSE; no task; no progress token, so no
 * notification can belong to it) runs straight through ToolCalls.ts, the same handler the SDK
 * `Server` calls (RpcServer.ts), and its JSON-RPC answer is written here. Anything else, and any
 * body the SDK's schema refuses, goes through the SDK as before.
 *
 * Why: a `Server` and a transport per request, the SDK's promise hops and its validation of the
 * message cost the gateway about six times the CPU of `POST /v1/execute` for the same execution
 * (bench/scenarios/mcp.ts under wrk: 1,323-1,423 calls/s against 9,152-9,417 executes/s).
 */
import { Effect } from "effect"
import { CallToolRequestSchema, ErrorCode } from "@modelcontextprotocol/sdk/types.js"
import { type JsonAnswer, jsonResponse } from "./HttpAnswers.ts"
import type { McpSession } from "./McpSessions.ts"
import type { makeToolCalls } from "./ToolCalls.ts"

const isObject = (value: unknown): value is { readonly [key: string]: unknown } =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const answer = (body: unknown) => jsonResponse(JSON.stringify(body), 200)

/** The answer to `body` when it is a plain JSON tools/call; undefined for the SDK path. */
export const fastCall = (
  toolCalls: ReturnType<typeof makeToolCalls>,
  body: unknown,
  session: McpSession,
  headerUserId: string | undefined
): Effect.Effect<JsonAnswer> | undefined => {
  if (!isObject(body) || body.method !== "tools/call" || !(typeof body.id === "string" || typeof body.id === "number")) return undefined
  const parsed = CallToolRequestSchema.safeParse(body)
  if (!parsed.success) return undefined
  const params = parsed.data.params
  if (params.task !== undefined || params._meta?.progressToken !== undefined) return undefined
  const id = body.id
  return toolCalls.call({
    session,
    headerUserId,
    requestId: id,
    name: params.name,
    arguments: params.arguments,
    task: undefined,
    meta: params._meta,
    notify: () => Effect.void
  }).pipe(
    Effect.map((called) => answer({ jsonrpc: "2.0", id, result: "task" in called ? { task: called.task } : called.result })),
    Effect.catchTag("RpcFailure", (failure) => Effect.succeed(answer({ jsonrpc: "2.0", id, error: { code: failure.code, message: failure.message } }))),
    Effect.catchDefect((defect) =>
      Effect.as(
        Effect.logError("MCP tools/call failed", defect),
        answer({ jsonrpc: "2.0", id, error: { code: ErrorCode.InternalError, message: "Internal error." } })
      )
    ),
    Effect.scoped
  )
}
