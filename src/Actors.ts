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
 *     // disableFatalDefects: a defect answers the caller with the defect; without it the entity
 *     // restarts and replays the message forever and the caller never gets a reply.
 *     { disableFatalDefects: true, maxIdleTime: "5 minutes" } // default idle: entityMaxIdleTime
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
 * owned by another runner cross the network. Payloads are encoded and decoded locally too
 * (`simulateRemoteSerialization`), replies are not, so a reply that does not match its schema
 * only fails across processes. Errors are `Schema.TaggedError`s (domain/Errors.ts). The client
 * can also fail with the cluster's MailboxFull, AlreadyProcessingMessage, PersistenceError and
 * EntityNotAssignedToRunner; map them at the edge (e.g. to ProviderUnavailable).
 */
import { Layer } from "effect"

export const EntitiesLive = Layer.mergeAll(Layer.empty)
