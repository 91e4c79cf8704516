/**
 * A JSON-RPC error a handler answers with (unknown tool -32602, task not found -32602, a task
 * request a tool's `taskSupport` forbids -32601), as opposed to the `isError` tool results that
 * carry the service's normalized errors.
 */
import { Schema } from "effect"

export class RpcFailure extends Schema.TaggedError<RpcFailure>()("RpcFailure", {
  code: Schema.Int,
  message: Schema.String
}) {}

export const INVALID_PARAMS = -32602
export const METHOD_NOT_FOUND = -32601

/**
 * A request the client cancelled, or the process's stop cut short (MCP's ConnectionClosed,
 * -32000): the work it asked about goes on, and asking again (elsewhere, or later) answers it.
 */
export const REQUEST_CANCELLED = { code: -32000, message: "The request was cancelled." } as const
