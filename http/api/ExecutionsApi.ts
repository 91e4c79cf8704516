/**
 * Executions (decisions.md section 3): execute sync or async, list, get one, cancel.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { ExecutionMode, ExecutionPage, ExecutionRecord, ExecutionStatus } from "../../domain/executions/ExecutionRecord.ts"
import { JsonObject } from "../../domain/JsonObject.ts"
import { UsesExecuteBucket } from "./Middleware.ts"
import { pageQuery } from "./Query.ts"

const Identifier = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.-]{1,64}$/))

export const ExecuteRequest = Schema.Struct({
  tool: Schema.String.check(Schema.isMaxLength(200)),
  input: Schema.optionalKey(JsonObject),
  userId: Schema.optionalKey(Identifier),
  connectionId: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(100))),
  mode: Schema.optionalKey(ExecutionMode),
  attachments: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMaxLength(100))).check(Schema.isMaxLength(32))),
  idempotencyKey: Schema.optionalKey(Schema.String.check(Schema.isBetweenLength(1, 255)))
})
export type ExecuteRequest = typeof ExecuteRequest.Type

export const ExecutionIdParam = { executionId: Schema.String.check(Schema.isMaxLength(100)) }

export class ExecutionsApi extends HttpApiGroup.make("executions")
  .add(
    HttpApiEndpoint.post("execute", "/v1/execute", {
      payload: ExecuteRequest,
      headers: {
        "idempotency-key": Schema.optionalKey(Schema.String.check(Schema.isBetweenLength(1, 255))),
        "x-service-user-id": Schema.optionalKey(Schema.String)
      },
      // 200 with a terminal record; 202 with the current record (async, or sync past its wait).
      success: [ExecutionRecord, ExecutionRecord.pipe(HttpApiSchema.status(202))]
    }).annotate(UsesExecuteBucket, true),
    HttpApiEndpoint.get("list", "/v1/executions", {
      query: {
        ...pageQuery,
        status: Schema.optionalKey(ExecutionStatus),
        tool: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
        userId: Schema.optionalKey(Schema.String)
      },
      headers: { "x-service-user-id": Schema.optionalKey(Schema.String) },
      success: ExecutionPage
    }),
    HttpApiEndpoint.get("get", "/v1/executions/:executionId", {
      params: ExecutionIdParam,
      success: ExecutionRecord
    }),
    HttpApiEndpoint.post("cancel", "/v1/executions/:executionId/cancel", {
      params: ExecutionIdParam,
      success: ExecutionRecord
    })
  ) {}
