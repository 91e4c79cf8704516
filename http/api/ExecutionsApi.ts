/**
 * Executions (decisions.md section 3): execute sync or async, list, get one, cancel.
 */
import { Schema } from "effect"
import { UserIdText } from "../../domain/Ids.ts"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ExecutionMode, ExecutionPage, ExecutionRecord, ExecutionStatus, TerminalExecution } from "../../domain/executions/ExecutionRecord.ts"
import { StateConflict } from "../../domain/Errors.ts"
import { AttachmentIds, IdempotencyKeyText } from "../../domain/executions/ExecuteFields.ts"
import { JsonObject } from "../../domain/JsonObject.ts"
import { UsesExecuteBucket } from "./Middleware.ts"
import { described, pageQuery } from "./Query.ts"
import { PathId } from "./PathId.ts"
import { UserHeader } from "./UserHeader.ts"


export const ExecuteRequest = Schema.Struct({
  tool: Schema.String.check(Schema.isMaxLength(200)),
  input: Schema.optionalKey(JsonObject),
  userId: Schema.optionalKey(UserIdText),
  connectionId: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100))),
  mode: Schema.optionalKey(ExecutionMode),
  attachments: Schema.optionalKey(AttachmentIds),
  idempotencyKey: Schema.optionalKey(IdempotencyKeyText)
})
export type ExecuteRequest = typeof ExecuteRequest.Type

export const ExecutionIdParam = { executionId: PathId }

export class ExecutionsApi extends HttpApiGroup.make("executions")
  .add(
    HttpApiEndpoint.post("execute", "/v1/execute", {
      payload: ExecuteRequest,
      headers: {
        "idempotency-key": Schema.optionalKey(IdempotencyKeyText),
        "x-service-user-id": Schema.optionalKey(Schema.String)
      },
      // 200 with a terminal record only; 202 with the current record (async, or sync past its
      // wait): pending or running, or terminal for an async replay of a finished execution.
      success: [TerminalExecution, ExecutionRecord.pipe(HttpApiSchema.status(202))]
    }).annotate(UsesExecuteBucket, true).annotateMerge(described(
      "Execute a tool",
      "Runs a catalog tool for a user of the project. `sync` (the default) waits for the terminal record and answers 200; " +
        "past the wait (SERVICE_EXECUTE_SYNC_WAIT_MS) or with `mode: \"async\"` it answers 202 with the current record, " +
        "to be read with GET /v1/executions/{executionId}. A failed tool is a 200 with a `failed` record, not an HTTP error. " +
        "The same `idempotencyKey` (body or `Idempotency-Key` header) with the same tool and input returns the first " +
        "execution, marked `replayed`; with other input it is refused (422). Takes a token from the execute bucket " +
        "(60/minute, burst 120 per project)."
    )),
    HttpApiEndpoint.get("list", "/v1/executions", {
      query: {
        ...pageQuery,
        status: Schema.optionalKey(ExecutionStatus),
        tool: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
        userId: Schema.optionalKey(Schema.String)
      },
      headers: UserHeader,
      success: ExecutionPage
    }).annotateMerge(described(
      "List executions",
      "Newest first, filtered by status, tool and user. A pinned key sees only its user's executions."
    )),
    HttpApiEndpoint.get("get", "/v1/executions/:executionId", {
      params: ExecutionIdParam,
      headers: UserHeader,
      success: ExecutionRecord
    }).annotateMerge(described("Get an execution", "The public record: never the input, idempotency identity, file bytes or credentials.")),
    HttpApiEndpoint.post("cancel", "/v1/executions/:executionId/cancel", {
      params: ExecutionIdParam,
      headers: UserHeader,
      success: ExecutionRecord,
      error: StateConflict
    }).annotateMerge(described(
      "Cancel an execution",
      "A pending or running execution becomes `cancelled`, with `cancellation.dispatchMayHaveBegun` telling whether the " +
        "provider may have seen it. Cancelling a cancelled execution returns it unchanged; a succeeded or failed one is 409."
    ))
  )
  .annotateMerge(OpenApi.annotations({ description: "Run catalog tools and read their records." })) {}
