/**
 * The actor runtime (docs/architecture.md, "Actors"): this process's runner lease and the keyed
 * leases of the actors that must run once across processes.
 */
import { Layer } from "effect"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as Leases from "./Leases.ts"
import * as Runner from "./Runner.ts"

export { Leases } from "./Leases.ts"
export { type Incarnation, Runner, supervise } from "./Runner.ts"

export const layer = Layer.merge(Runner.layer, Leases.layer)

export const migrations: ReadonlyArray<Migration> = Runner.runnerMigrations
export const projections: ReadonlyArray<Projection> = []
