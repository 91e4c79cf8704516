/**
 * The event log and its views (architecture.md, "Event log", "Projections"): the append-only
 * store, the view store the projections write, and the schema they need. Every other feature
 * builds on this one.
 */
import { Layer } from "effect"
import { onStorage } from "./Database.ts"
import { layerMemory } from "./MemoryEventStore.ts"
import * as MemoryRetention from "./MemoryRetention.ts"
import { layerPgEventStore } from "./PgEventStore.ts"
import { eventLogMigrations, type Migration } from "./PgMigrations.ts"
import type { Projection } from "./Projection.ts"
import { layerPgViewStore } from "./PgViewStore.ts"

export { Database } from "./Database.ts"
export { EventStore } from "./EventStore.ts"
export { Projections } from "./Projection.ts"
export { ViewStore } from "./ViewStore.ts"

/**
 * EventStore and ViewStore on the storage in use (with memory retention, in memory); the
 * projections come from the composition root.
 */
export const layer = Layer.merge(onStorage(layerMemory, Layer.merge(layerPgEventStore, layerPgViewStore)), MemoryRetention.layer)

export const migrations: ReadonlyArray<Migration> = eventLogMigrations
export const projections: ReadonlyArray<Projection> = []
export const streamTypes: ReadonlyArray<string> = []
