/**
 * Executions (decisions.md section 3): the Executions service the API and the gateway call, the
 * Execution actor behind it, its start-up recovery, the toolkit permits and the executions view.
 * Its ports are served here by the connections and the staged files.
 */
import { Layer } from "effect"
import { STREAM_TYPE as EXECUTION_STREAM_TYPE } from "../../domain/executions/Execution.ts"
import { STREAM_TYPE as IDEMPOTENCY_STREAM_TYPE } from "../../domain/executions/Idempotency.ts"
import * as Actors from "../actors/index.ts"
import * as Access from "../access/index.ts"
import * as Connections from "../connections/index.ts"
import { onStorage } from "../eventlog/Database.ts"
import * as Eventlog from "../eventlog/index.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as Files from "../files/index.ts"
import { attachmentPort } from "../files/StagedFiles.ts"
import * as Providers from "../providers/index.ts"
import * as ExecutionActor from "./ExecutionActor.ts"
import * as ExecutionPermits from "./ExecutionPermits.ts"
import { AttachmentFiles, ConnectionResolver } from "./ExecutionPorts.ts"
import * as ExecutionRecovery from "./ExecutionRecovery.ts"
import * as Executions from "./Executions.ts"
import { executionsProjection } from "./ExecutionsProjection.ts"
import * as PgExecutionPermits from "./PgExecutionPermits.ts"

export { ExecutionActor } from "./ExecutionActor.ts"
export { Executions } from "./Executions.ts"

/** The executor's ports, served by the connection store and the staged files. */
const PortsLive = Layer.mergeAll(
  Layer.effect(ConnectionResolver, Connections.Connections.useSync((connections) => ({ resolve: connections.resolve }))),
  Layer.effect(AttachmentFiles, Files.StagedFiles.useSync(attachmentPort))
).pipe(Layer.provide([Connections.layer, Files.layer]))

const PermitsLive = onStorage(ExecutionPermits.layerMemory, PgExecutionPermits.layerPg)

/** The actor and its dependencies, for callers (tests, benchmarks) that drive it directly. */
export const actorLayer = ExecutionActor.layer.pipe(
  Layer.provideMerge(PortsLive),
  Layer.provideMerge(PermitsLive),
  Layer.provide([Providers.layer, Actors.layer, Eventlog.layer])
)

export const layer = Layer.mergeAll(Executions.layer, ExecutionRecovery.layer).pipe(
  Layer.provideMerge(actorLayer),
  Layer.provide([Actors.layer, Eventlog.layer, Access.layer])
)

export const migrations: ReadonlyArray<Migration> = PgExecutionPermits.permitMigrations
export const projections: ReadonlyArray<Projection> = [executionsProjection]
export const streamTypes: ReadonlyArray<string> = [EXECUTION_STREAM_TYPE, IDEMPOTENCY_STREAM_TYPE]
