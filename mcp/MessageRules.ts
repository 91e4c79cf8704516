/**
 * What a POST body to `/mcp` must be before anything answers it, checked by the gateway
 * (McpGateway.ts) ahead of the SDK, which is laxer on each point:
 *
 * - One JSON-RPC message (MCP 2025-11-25, "Transports": "The body of the POST request MUST be a
 *   single JSON-RPC request, notification, or response"). Batches were dropped in 2025-06-18; a
 *   session of an older version may still send one, and a member of it that is no message gets
 *   its own -32600 beside the others' answers (JSON-RPC 2.0 section 6).
 * - Valid JSON that is not a JSON-RPC message is -32600 Invalid Request (JSON-RPC 2.0, section
 *   5.1); the SDK calls it a parse error, which is for text that is not JSON.
 * - `initialize` is a request: as a notification it would open a session nobody was answered.
 * - Params that the method's schema refuses are -32602 Invalid params with a short message: the
 *   SDK's own handler wrapper throws the schema's error, which answers -32603 with the whole
 *   issue list as its message. Such an answer is sent as the SDK sends the others (SSE when the
 *   client takes it: RpcExchange.ts `answer`).
 * - The tasks methods exist from 2025-11-25 on: a session of an older version, to which the
 *   server declared no tasks, gets -32601 Method not found for them.
 * - An integer id past 2^53 - 1 is -32600 (`inexactId`): the parse cannot keep it.
 * - A message nested deeper than `MAX_NESTING` levels is -32600 Invalid Request, judged on the
 *   text before it is parsed: the checks above and the SDK's walk messages recursively, and
 *   10,000 levels overflowed the stack (a retryable 500), or were a -32700 quoting the RangeError.
 */
import {
  CallToolRequestSchema,
  CancelTaskRequestSchema,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  PingRequestSchema
} from "@modelcontextprotocol/sdk/types.js"
import type { RpcId } from "./HttpAnswers.ts"
import { isJsonObject } from "../domain/JsonObject.ts"

/** The first protocol version without JSON-RPC batches. */
const NO_BATCHES_FROM = "2025-06-18"
/** The first protocol version with tasks. */
const TASKS_FROM = "2025-11-25"
const TASK_METHODS = new Set(["tasks/get", "tasks/result", "tasks/cancel", "tasks/list"])

export const INVALID_REQUEST = -32600
export const METHOD_NOT_FOUND = -32601
export const INVALID_PARAMS = -32602

export interface Refusal {
  readonly code: number
  readonly message: string
  readonly id: RpcId
}

/**
 * Nesting levels (objects and arrays) a message may have. Far above what any message needs, and
 * above the 64 levels tool arguments may have (domain/Storable.ts), so deeper arguments stay an
 * `isError` result about their depth, as on `POST /v1/execute`, up to this bound.
 */
export const MAX_NESTING = 512

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Whether JSON text nests deeper than `limit` levels, counted on the text (brackets in strings
 * aside) in one pass: nothing recursive may meet such a message, the parse included.
 */
export const nestedDeeperThan = (text: string, limit: number): boolean => {
  // Fewer characters than levels cannot get there.
  if (text.length <= limit) return false
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (inString) {
      if (code === BACKSLASH) i++
      else if (code === QUOTE) inString = false
    } else if (code === QUOTE) inString = true
    else if (code === 0x5b || code === 0x7b) {
      if (++depth > limit) return true
    } else if (code === 0x5d || code === 0x7d) depth--
  }
  return false
}

/** The refusal of a message nested deeper than `MAX_NESTING` levels. */
export const tooDeep: Refusal = {
  code: INVALID_REQUEST,
  message: `Invalid Request: the message is nested deeper than ${MAX_NESTING} levels.`,
  id: null
}

/**
 * The refusal of a message whose integer id a double cannot hold exactly (past 2^53 - 1): the
 * parse reads it as the nearest double, so its answer would carry another id than the one sent,
 * and two such ids one apart would share the default idempotency key `mcp:<session>:<id>`. The
 * SDK's schema takes them; JSON-RPC leaves the range to the implementation. Answered with id
 * null, since the id sent cannot be repeated.
 */
const inexactId = (message: unknown): Refusal | undefined =>
  isJsonObject(message) && typeof message.id === "number" && Number.isInteger(message.id) && !Number.isSafeInteger(message.id)
    ? { code: INVALID_REQUEST, message: `Invalid Request: an integer id must lie within ±${Number.MAX_SAFE_INTEGER}; send a larger one as a string.`, id: null }
    : undefined

/** The id of a message, when it has a usable one; null otherwise (as JSON-RPC answers then). */
export const idOf = (message: unknown): RpcId =>
  isJsonObject(message) && (typeof message.id === "string" || typeof message.id === "number") ? message.id : null

/** Whether a body is a batch (a JSON array of messages). */
export const isBatch = (body: unknown): body is ReadonlyArray<unknown> => Array.isArray(body)

/**
 * The refusal of a body that is no JSON-RPC message, or of an empty batch. A batch's members are
 * judged one by one (`batchMembers`), once its session is known to take batches.
 */
export const notAMessage = (body: unknown): Refusal | undefined => {
  if (isBatch(body)) return body.length === 0 ? { code: INVALID_REQUEST, message: "Invalid Request: an empty batch.", id: null } : undefined
  const inexact = inexactId(body)
  if (inexact !== undefined) return inexact
  if (plainRequest(body) || JSONRPCMessageSchema.safeParse(body).success) return undefined
  return { code: INVALID_REQUEST, message: "Invalid Request: the body is not a JSON-RPC 2.0 request, notification or response.", id: idOf(body) }
}

/**
 * A batch's members that are messages, and the refusals of those that are not: JSON-RPC 2.0
 * section 6 answers each of those with its own error and the others as usual.
 */
export const batchMembers = (batch: ReadonlyArray<unknown>): { readonly valid: ReadonlyArray<unknown>; readonly refused: ReadonlyArray<Refusal> } => {
  const valid: Array<unknown> = []
  const refused: Array<Refusal> = []
  for (const member of batch) {
    // A member that is itself an array is no message either.
    const refusal = isBatch(member) ? { code: INVALID_REQUEST, message: "Invalid Request: a batch member is itself a batch.", id: null } : notAMessage(member)
    if (refusal === undefined) valid.push(member)
    else refused.push(refusal)
  }
  return { valid, refused }
}

/** The JSON-RPC error answering a refusal. */
export const errorOf = (refused: Refusal) => ({ jsonrpc: "2.0", id: refused.id, error: { code: refused.code, message: refused.message } })

const MESSAGE_KEYS = new Set(["jsonrpc", "id", "method", "params"])

/**
 * A request or notification of the usual shape, judged without the SDK's schema (a parse of it
 * costs a tools/call about 13 us): `jsonrpc` "2.0", a string method, a string or integer id or
 * none, params an object or none, nothing else. Its `_meta` is left to the method's schema
 * (`checkRequest`), so a method without one takes the full parse.
 */
const plainRequest = (message: unknown): boolean => {
  if (!isJsonObject(message) || message.jsonrpc !== "2.0" || typeof message.method !== "string") return false
  if ("id" in message && typeof message.id !== "string" && !Number.isInteger(message.id)) return false
  if ("params" in message && !isJsonObject(message.params)) return false
  for (const key in message) if (!MESSAGE_KEYS.has(key)) return false
  return SCHEMAS.has(message.method) || !isJsonObject(message.params) || !("_meta" in message.params)
}

/** The refusal of a batch for a session of `protocolVersion`. */
export const batchRefused = (protocolVersion: string): Refusal | undefined =>
  protocolVersion >= NO_BATCHES_FROM
    ? { code: INVALID_REQUEST, message: `Invalid Request: protocol version ${protocolVersion} takes one JSON-RPC message per POST, not a batch.`, id: null }
    : undefined

/** The refusal of an `initialize` that is not a request (it has no id). */
export const initializeRefused = (body: unknown): Refusal | undefined =>
  idOf(body) === null ? { code: INVALID_REQUEST, message: "Invalid Request: initialize must be a request, with an id.", id: null } : undefined

interface ParamsSchema {
  readonly safeParse: (value: unknown) =>
    | { readonly success: true; readonly data: unknown }
    | { readonly success: false; readonly error: { readonly issues: ReadonlyArray<{ readonly path: ReadonlyArray<PropertyKey>; readonly message: string }> } }
}

/** The requests the gateway's server answers, by method, with the schema of each. */
const SCHEMAS: ReadonlyMap<string, ParamsSchema> = new Map<string, ParamsSchema>([
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tools/call", CallToolRequestSchema],
  ["tasks/get", GetTaskRequestSchema],
  ["tasks/result", GetTaskPayloadRequestSchema],
  ["tasks/cancel", CancelTaskRequestSchema]
])

/**
 * A request checked against its session's version (the tasks methods) and its method's schema:
 * refused (the first issue, briefly), or parsed (the schema's output, which the fast path then
 * takes as it is); undefined for a method the gateway has no schema for, or no request.
 */
export type ParamsCheck = { readonly _tag: "Refused"; readonly refusal: Refusal } | { readonly _tag: "Parsed"; readonly value: unknown }

export const checkRequest = (message: unknown, protocolVersion: string): ParamsCheck | undefined => {
  if (!isJsonObject(message) || typeof message.method !== "string") return undefined
  const id = idOf(message)
  if (id === null) return undefined
  const unknown = methodRefused(message, id, protocolVersion)
  if (unknown !== undefined) return { _tag: "Refused", refusal: unknown }
  const schema = SCHEMAS.get(message.method)
  if (schema === undefined) return undefined
  const parsed = schema.safeParse(message)
  if (parsed.success) return { _tag: "Parsed", value: parsed.data }
  const issue = parsed.error.issues[0]
  const where = issue === undefined ? "params" : issue.path.map(String).join(".") || "params"
  return { _tag: "Refused", refusal: { code: INVALID_PARAMS, message: `Invalid params: ${where}: ${(issue?.message ?? "not valid").slice(0, 120)}`, id } }
}

/** The refusal of a tasks method in a session whose protocol version has no tasks. */
const methodRefused = (message: { readonly [key: string]: unknown }, id: RpcId, protocolVersion: string): Refusal | undefined => {
  if (typeof message.method !== "string" || !TASK_METHODS.has(message.method) || protocolVersion >= TASKS_FROM) return undefined
  return { code: METHOD_NOT_FOUND, message: `Method not found: ${message.method} (no tasks at protocol version ${protocolVersion}).`, id }
}
