/**
 * The actor runtime (docs/architecture.md, "Actors"): this process's runner lease, the keyed
 * leases of the actors that must run once across processes, and the clean stop that lets
 * actors finish their work in flight before their leases are given up.
 */
import { Layer } from "effect"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as Leases from "./Leases.ts"
import * as Runner from "./Runner.ts"
import * as Shutdown from "./Shutdown.ts"

export { Leases } from "./Leases.ts"
export { type Incarnation, Runner, supervise } from "./Runner.ts"
export { Shutdown } from "./Shutdown.ts"

export const layer = Layer.mergeAll(Runner.layer, Leases.layer, Shutdown.layer)

export const migrations: ReadonlyArray<Migration> = Runner.runnerMigrations
export const projections: ReadonlyArray<Projection> = []
export const streamTypes: ReadonlyArray<string> = []
