/**
 * Chooses the stores: everything in memory without SERVICE_DATABASE_URL, Postgres (migrated at
 * start-up) with it. Both variants provide the same services, so nothing above this module
 * knows which one runs.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import * as Actors from "../infra/actors/Actors.ts"
import * as ApiKeys from "../infra/access/ApiKeys.ts"
import * as ExecutionOwners from "../infra/executions/ExecutionOwners.ts"
import * as ExecutionPermits from "../infra/executions/ExecutionPermits.ts"
import * as PgExecutionPermits from "../infra/executions/PgExecutionPermits.ts"
import { EventStore } from "../infra/eventlog/EventStore.ts"
import { layerMemory as memoryEventStore, MemoryTablesService } from "../infra/eventlog/MemoryEventStore.ts"
import { layerPgEventStore } from "../infra/eventlog/PgEventStore.ts"
import { eventLogMigrations, type Migration, runMigrations } from "../infra/eventlog/PgMigrations.ts"
import { layerPgViewStore } from "../infra/eventlog/PgViewStore.ts"
import { Projections } from "../infra/eventlog/Projection.ts"
import { ensureProjectionTables } from "../infra/eventlog/ProjectionAdmin.ts"
import { layerSweeper } from "../infra/files/FileSweeper.ts"
import { fileMigrations, layerPg as pgStagedFiles } from "../infra/files/PgStagedFiles.ts"
import * as RateLimiter from "../infra/access/RateLimiter.ts"
import * as Secrets from "../infra/access/Secrets.ts"
import { layerMemory as memoryStagedFiles, StagedFiles } from "../infra/files/StagedFiles.ts"
import { ViewStore } from "../infra/eventlog/ViewStore.ts"
import { webhookMigrations } from "../infra/webhooks/WebhookDispatcher.ts"
import { AppConfig, type AppConfigShape } from "./Config.ts"
import { allProjections } from "./Projections.ts"

/** Every schema step of every feature, applied in id order. */
export const allMigrations: ReadonlyArray<Migration> = [
  ...eventLogMigrations,
  ...RateLimiter.rateLimitMigrations,
  ...fileMigrations,
  ...PgExecutionPermits.permitMigrations,
  ...webhookMigrations
]

export type InfraServices =
  | EventStore
  | ViewStore
  | ApiKeys.ApiKeys
  | RateLimiter.RateLimiter
  | Secrets.Secrets
  | Projections
  | StagedFiles
  | Actors.ActorServices
  | ExecutionPermits.ExecutionPermits
  | ExecutionOwners.ExecutionOwners

export const ProjectionsLive = Layer.succeed(Projections, allProjections)

export const pgClientLayer = (url: Redacted.Redacted<string>) =>
  PgClient.layer({ url, maxConnections: 16, applicationName: "service" })

/** The database, migrated and with every projection table present, before anything uses it. */
export const DatabaseLive = (url: Redacted.Redacted<string>) =>
  Layer.effectDiscard(
    Effect.gen(function*() {
      const applied = yield* runMigrations(allMigrations)
      if (applied.length > 0) yield* Effect.logInfo(`applied migrations: ${applied.join(", ")}`)
      yield* ensureProjectionTables
    })
  ).pipe(Layer.provideMerge(pgClientLayer(url)), Layer.provide(ProjectionsLive))

/** Staged files with their expiry sweeper running for as long as the service does. */
const withSweeper = <E, R>(files: Layer.Layer<StagedFiles, E, R>) => layerSweeper().pipe(Layer.provideMerge(files))

export const MemoryInfra = Layer.mergeAll(
  memoryEventStore,
  ApiKeys.layerMemory,
  RateLimiter.layerMemory,
  Secrets.layer,
  withSweeper(memoryStagedFiles),
  Actors.layerMemory,
  ExecutionPermits.layerMemory,
  ExecutionOwners.layerMemory
).pipe(Layer.provideMerge(ProjectionsLive))

/** The actor runtime is a single runner, or one of several when SERVICE_RUNNER_ADDRESS is set. */
export const PgInfra = (url: Redacted.Redacted<string>, runnerAddress?: AppConfigShape["runnerAddress"]) =>
  Layer.mergeAll(
    layerPgEventStore,
    layerPgViewStore,
    ApiKeys.layerPg,
    RateLimiter.layerPg,
    Secrets.layer,
    withSweeper(pgStagedFiles),
    runnerAddress === undefined ? Actors.layerSingle : Actors.layerRunner(runnerAddress),
    PgExecutionPermits.layerPg,
    ExecutionOwners.layerPg
  ).pipe(Layer.provideMerge(ProjectionsLive), Layer.provideMerge(DatabaseLive(url)))

export const InfraLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    config.databaseUrl === undefined
      ? (MemoryInfra as Layer.Layer<InfraServices | MemoryTablesService, never, AppConfig>)
      : (PgInfra(config.databaseUrl, config.runnerAddress) as unknown as Layer.Layer<InfraServices, never, AppConfig>))
)
