/**
 * Every actor kind the service runs. The runtime (`infra/Actors.ts`, chosen in `src/Infra.ts`)
 * provides `Sharding`; this layer registers the entities with it.
 *
 * A feature registers an entity by adding its layer to `EntitiesLive`:
 *
 *   // features/executions/ExecutionEntity.ts
 *   export const Execution = Entity.make("Execution", [Start, Cancel])
 *   export const ExecutionEntityLive = Execution.toLayer(
 *     Effect.gen(function*() {
 *       const store = yield* EventStore              // any service of InfraLive
 *       return Execution.of({ Start: ({ payload }) => ..., Cancel: ({ payload }) => ... })
 *     }),
 *     { maxIdleTime: "5 minutes" }                   // optional; default entityMaxIdleTime
 *   )
 *
 *   // here
 *   export const EntitiesLive = Layer.mergeAll(Layer.empty, ExecutionEntityLive)
 *
 * A caller (an HTTP handler, another entity) sends with the entity's client:
 *   const execution = (yield* Execution.client)(executionId)
 *   const reply = yield* execution.Start({ ... })
 *
 * Payloads, successes and errors are schemas and must survive encoding: messages to an entity
 * owned by another runner cross the network, and in every mode local messages are encoded and
 * decoded too (`simulateRemoteSerialization`).
 */
import { Layer } from "effect"

export const EntitiesLive = Layer.mergeAll(Layer.empty)
