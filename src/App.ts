/**
 * The composition root: the features' layers merged into the running service. Each feature
 * (infra/<feature>/index.ts) provides its own dependencies and picks memory or Postgres itself;
 * here they only meet the database and the projections they all share.
 */
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import * as Access from "../infra/access/index.ts"
import * as DevKey from "../infra/access/DevKey.ts"
import * as Actors from "../infra/actors/index.ts"
import * as Connections from "../infra/connections/index.ts"
import * as Database from "../infra/eventlog/Database.ts"
import * as Eventlog from "../infra/eventlog/index.ts"
import * as Executions from "../infra/executions/index.ts"
import * as Files from "../infra/files/index.ts"
import * as Observability from "../infra/observability/index.ts"
import * as Triggers from "../infra/triggers/index.ts"
import * as Webhooks from "../infra/webhooks/index.ts"
import { HttpServerLive } from "../http/server/Server.ts"
import * as Mcp from "../mcp/index.ts"

const features = [Eventlog, Actors, Access, Files, Connections, Executions, Webhooks, Triggers, Mcp, Observability] as const

/** Every schema step of every feature (applied in id order) and every projection. */
export const migrations = features.flatMap((feature) => feature.migrations)
export const projections = features.flatMap((feature) => feature.projections)
/** Every stream type the features write to the event log, each once, sorted (`events tail --stream-type`). */
export const streamTypes: ReadonlyArray<string> = [...new Set(features.flatMap((feature) => feature.streamTypes))].toSorted()

export const ProjectionsLive = Layer.succeed(Eventlog.Projections, projections)

/** Memory, or Postgres migrated with every feature's schema, as SERVICE_DATABASE_URL says. */
export const DatabaseLive = Database.layer({ migrations, projections })

/** The features without the HTTP server: what the service, tests and benchmarks run on. */
export const FeaturesLive = Layer.mergeAll(
  Eventlog.layer,
  Actors.layer,
  Access.layer,
  Files.layer,
  Connections.layer,
  Executions.layer,
  Webhooks.layer,
  Triggers.layer,
  Mcp.layer,
  Observability.layer
).pipe(Layer.provideMerge(ProjectionsLive), Layer.provideMerge(DatabaseLive))

const ListenLog = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) => Effect.logInfo(`listening on ${address}`))
)

/** The development key's line comes before the listening line, as the README shows them. */
export const AppLive = ListenLog.pipe(
  Layer.provide(DevKey.layer),
  Layer.provideMerge(HttpServerLive),
  Layer.provideMerge(FeaturesLive)
)
