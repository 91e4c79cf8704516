/**
 * Operating the service (decisions.md section 9): the gauges read from the store, readiness,
 * the watch on the log's feed being held back by an open transaction (FeedWatch.ts), and (in access/, run by DurableSecrets.ts) the check that the secret key opens the data sealed under it (KeyCheck.ts). Logs,
 * metrics and traces themselves are written where things happen (Logging.ts, Metrics.ts,
 * Tracing.ts); OTLP export wraps the whole service (Telemetry.ts, src/main.ts).
 */
import { Layer } from "effect"
import * as Actors from "../actors/index.ts"
import * as Eventlog from "../eventlog/index.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as FeedWatch from "./FeedWatch.ts"
import * as Gauges from "./Gauges.ts"
import * as Readiness from "./Readiness.ts"

export { Gauges } from "./Gauges.ts"
export { Readiness } from "./Readiness.ts"

export const layer = Layer.merge(Readiness.layer.pipe(Layer.provideMerge(Gauges.layer)), FeedWatch.layer).pipe(
  Layer.provide([Eventlog.layer, Actors.layer])
)

export const migrations: ReadonlyArray<Migration> = []
export const projections: ReadonlyArray<Projection> = []
export const streamTypes: ReadonlyArray<string> = []
