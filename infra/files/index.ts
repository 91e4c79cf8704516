/**
 * Staged files (the spec's Staged files): the store (memory or Postgres blob table), its expiry
 * sweeper, and its schema. No event log: file bytes and metadata never enter it.
 */
import { Layer } from "effect"
import { onStorage } from "../eventlog/Database.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import { layerSweeper } from "./FileSweeper.ts"
import { fileMigrations, layerPg } from "./PgStagedFiles.ts"
import { layerMemory } from "./StagedFiles.ts"

export { StagedFiles } from "./StagedFiles.ts"

/** The store, with its sweeper running for as long as the service does (draining all, in memory). */
export const layer = onStorage(layerSweeper({ drain: true }), layerSweeper()).pipe(Layer.provideMerge(onStorage(layerMemory, layerPg)))

export const migrations: ReadonlyArray<Migration> = fileMigrations
export const projections: ReadonlyArray<Projection> = []
export const streamTypes: ReadonlyArray<string> = []
