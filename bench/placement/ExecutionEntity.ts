/**
 * The execution placement under test: an `Execution` cluster entity whose one message runs
 * `Executions.execute` (so the entity hop is added in front of exactly what the direct placement
 * calls). Volatile messages (no `ClusterSchema.Persisted`), schemas as the service would declare
 * them: the payload's fields, the public execution record as the reply, the service's
 * tagged errors.
 */
import { Effect, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { InvalidInput, RateLimited } from "../../domain/Errors.ts"
import { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { Executions } from "../../infra/executions/Executions.ts"

export const Execute = Rpc.make("Execute", {
  payload: {
    projectId: Schema.String,
    userId: Schema.String,
    tool: Schema.String,
    input: Schema.Json
  },
  success: Schema.Struct({ record: ExecutionRecord, terminal: Schema.Boolean }),
  error: Schema.Union([InvalidInput, RateLimited])
})

export const Execution = Entity.make("Execution", [Execute])

/**
 * A fresh layer value per call: two Sharding instances in one process (with and without
 * serialization simulation) must each register their own.
 *
 * `maxIdleTime` is short because an execution entity has nothing left to do once its sync run
 * answered; the cluster's reaper still only runs every 5 s at best (entityReaper.ts).
 */
export const makeExecutionEntityLayer = () =>
  Execution.toLayer(
    Effect.gen(function*() {
      const executions = yield* Executions
      return Execution.of({
        Execute: ({ payload }) =>
          executions.execute({
            projectId: payload.projectId,
            userId: payload.userId,
            tool: payload.tool,
            input: payload.input,
            mode: undefined,
            connectionId: undefined,
            attachments: undefined,
            idempotencyKey: undefined
          })
      })
    }),
    { maxIdleTime: "1 second", disableFatalDefects: true }
  )
