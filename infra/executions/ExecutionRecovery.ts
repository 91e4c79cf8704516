/**
 * Recovery of executions whose owning process is gone (decisions.md section 3, durable mode): an
 * execution whose dispatch may have begun (`running`) becomes failed `execution_interrupted`;
 * stale permits are freed; then every `pending` one is dispatched here, oldest first.
 *
 * It runs while the service starts (the previous process on this database may have been killed)
 * and, with a database, every few seconds after that, so the executions of a peer killed with -9
 * are taken over by the processes still running. An owner is an incarnation of a runner
 * (actors/Runner.ts), gone when its lease has lapsed or been given up, by which time it has
 * stopped its dispatches; executions of live owners are never touched, and two processes taking
 * over the same execution are kept apart by the expected version of its stream. A process whose
 * own lease lapsed (the database was out of reach) recovers its former executions like a peer's.
 */
import { Cause, Effect, Layer, Schedule } from "effect"
import { decodeToolInput, findTool } from "../../domain/catalog/index.ts"
import type { ExecutionRequested } from "../../domain/executions/Execution.ts"
import { isDurable } from "../eventlog/Database.ts"
import { ExecutionActor } from "./ExecutionActor.ts"
import { Runner } from "../actors/Runner.ts"
import { ExecutionPermits } from "./ExecutionPermits.ts"
import { ConnectionResolver } from "./ExecutionPorts.ts"
import { TABLE } from "./ExecutionsProjection.ts"
import { Secrets } from "../access/Secrets.ts"
import { listAll, ViewStore } from "../eventlog/ViewStore.ts"

const PAGE = 500

const idsWithStatus = (views: ViewStore["Service"], status: string) =>
  Effect.map(
    listAll(views, TABLE, { where: [{ column: "status", op: "=", value: status }], key: "execution_id", pageSize: PAGE }),
    (rows) => rows.flatMap((row) => (typeof row.execution_id === "string" ? [row.execution_id] : []))
  )

export const recoverExecutions = Effect.gen(function*() {
  const views = yield* ViewStore
  const actor = yield* ExecutionActor
  const permits = yield* ExecutionPermits
  const secrets = yield* Secrets
  const connections = yield* ConnectionResolver
  const runner = yield* Runner
  const running = yield* idsWithStatus(views, "running")
  const pending = yield* idsWithStatus(views, "pending")
  if (running.length + pending.length === 0) return
  const resumePlan = Effect.fnUntraced(function*(request: ExecutionRequested) {
    const tool = findTool(request.tool)
    if (tool === undefined) return yield* Effect.fail("the tool left the catalog")
    if (request.sealedInput === undefined) return yield* Effect.fail("the input was not kept")
    const opened = secrets.open(request.sealedInput)
    if (opened === undefined) return yield* Effect.fail("the input cannot be opened")
    const input = yield* decodeToolInput(tool, JSON.parse(opened)).pipe(Effect.mapError(() => "the input no longer validates"))
    const connection = yield* connections.resolve({
      projectId: request.projectId,
      userId: request.userId,
      toolkit: tool.toolkit,
      connectionId: request.connectionId,
      scopes: tool.scopes
    }).pipe(Effect.mapError(() => "the connection is no longer available"))
    return { tool, input, credentials: connection.credentials, permitHeld: false }
  })
  const taken = yield* actor.recover({
    running,
    pending,
    alive: runner.alive,
    beforeResume: permits.reclaimStale,
    resumePlan
  })
  if (taken.interrupted + taken.resumed > 0) {
    yield* Effect.logInfo(`recovered executions no process was running: ${taken.interrupted} interrupted, ${taken.resumed} resumed`)
  }
})

/** How often a process with a database looks for executions of peers that stopped. */
const SCAN_INTERVAL = "5 seconds"

/**
 * With a database: runs recovery while the service starts, before it serves (resumed executions
 * are dispatched in the background), then every SCAN_INTERVAL for peers that stopped.
 */
export const layer = Layer.effectDiscard(
  Effect.gen(function*() {
    // Without a database the log starts empty and there are no peers: nothing to recover, ever.
    // (Listing by status would also give the memory table a status index kept up for nothing.)
    if (!(yield* isDurable)) return
    // The store out of reach is an outage, expected and retried (warn); a defect is an error.
    const recover = recoverExecutions.pipe(Effect.catchCause((cause) =>
      Cause.hasDies(cause)
        ? Effect.logError("execution recovery failed", cause)
        : Effect.logWarning(`execution recovery failed; retrying in ${SCAN_INTERVAL}`, cause)
    ))
    yield* recover
    yield* Effect.forkScoped(Effect.repeat(Effect.delay(recover, SCAN_INTERVAL), Schedule.forever))
  })
)
