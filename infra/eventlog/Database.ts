/**
 * Where the service keeps its state: in memory without SERVICE_DATABASE_URL, in Postgres
 * (migrated, with every projection's tables present, before anything uses it) with it.
 *
 * Every feature offers a memory and a Postgres variant of its layer and lets `onStorage` pick
 * one. The Postgres client travels inside the `Database` value, so a Postgres variant's need
 * for `SqlClient` is met in plain sight rather than assumed from whatever else was provided.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, type Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { databaseUrl, integer } from "../Settings.ts"
import * as PgBoundedClient from "./PgBoundedClient.ts"
import { checkSchemaCurrent, checkSchemaVersion, type Migration, runMigrations } from "./PgMigrations.ts"
import { type Projection, Projections } from "./Projection.ts"
import { ensureProjectionTables } from "./ProjectionAdmin.ts"

export type Storage =
  | { readonly _tag: "Memory" }
  | {
    readonly _tag: "Postgres"
    readonly sql: SqlClient.SqlClient
    readonly pg: PgClient.PgClient
    /**
     * Staged files' bytes: a client over a small pool of its own (BLOB_POOL_SIZE), bounded by
     * BLOB_BOUND_MS at least. A write of many MiB may take seconds; on the shared pool it held
     * connections every feature needs and, past the shared bound, took the whole store for hung.
     */
    readonly blobs: SqlClient.SqlClient
    /** Ids of the migrations this code knows: readiness compares them with those applied. */
    readonly migrationIds: ReadonlyArray<number>
  }

export class Database extends Context.Service<Database, Storage>()("app/infra/eventlog/Database") {}

/** What the schema is made of: every feature's migrations and projections. */
export interface SchemaParts {
  readonly migrations: ReadonlyArray<Migration>
  readonly projections: ReadonlyArray<Projection>
  /**
   * Inspect only (the commands that read): the schema must already be this version's, and
   * nothing is applied or rebuilt; a database not migrated to it is refused (SchemaBehind).
   */
  readonly readOnly?: boolean
}

/** Connections of the pool every feature shares. */
export const POOL_SIZE = 16

/** Connections of the staged files' blob pool: at most this many blobs are written or read at once. */
export const BLOB_POOL_SIZE = 4

/** The least bound of a blob statement, or of its wait for a connection (several 25 MiB writes may queue). */
export const BLOB_BOUND_MS = 60_000

/**
 * SERVICE_STORE_TIMEOUT_MS: how long the serving process waits for one statement, or for a
 * connection, before it takes the store for unavailable (a Postgres that hangs instead of
 * refusing; PgBoundedClient.ts). 0 waits as long as it takes.
 */
export const storeTimeoutSetting = Effect.map(
  integer("SERVICE_STORE_TIMEOUT_MS", 5_000, 0, 600_000),
  (ms) => (ms === 0 ? undefined : ms)
)

/**
 * The pool every feature shares, with its bounded client (by `boundMs`, when set) and its
 * unbounded one (PgBoundedClient.ts).
 */
const pgClients = (url: Redacted.Redacted<string>, boundMs: number | undefined) =>
  PgBoundedClient.make({ url, maxConnections: POOL_SIZE, applicationName: "service" }, boundMs)

export const layerMemory: Layer.Layer<Database> = Layer.succeed(Database, { _tag: "Memory" })

/**
 * Postgres at `url`, migrated, with the tables of every projection. `boundMs` bounds every
 * statement of the client the features get (the serving process); migrations run unbounded
 * whatever it is, as does everything of an operator command (which passes none).
 */
export const layerPostgres = (url: Redacted.Redacted<string>, parts: SchemaParts, boundMs?: number) =>
  Layer.effect(
    Database,
    Effect.gen(function*() {
      const clients = yield* pgClients(url, boundMs)
      const blobs = yield* PgBoundedClient.make(
        { url, maxConnections: BLOB_POOL_SIZE, applicationName: "service-blobs" },
        boundMs === undefined ? undefined : Math.max(boundMs, BLOB_BOUND_MS)
      )
      const unbounded = Layer.mergeAll(
        Layer.succeed(SqlClient.SqlClient, clients.unbounded),
        Layer.succeed(PgClient.PgClient, clients.unbounded)
      )
      yield* Effect.gen(function*() {
        // A database migrated by a newer version is refused before anything is applied to it.
        yield* checkSchemaVersion(parts.migrations)
        if (parts.readOnly === true) return yield* checkSchemaCurrent(parts.migrations)
        const applied = yield* runMigrations(parts.migrations)
        if (applied.length > 0) yield* Effect.logInfo(`applied migrations: ${applied.join(", ")}`)
        yield* ensureProjectionTables.pipe(Effect.provideService(Projections, parts.projections))
      }).pipe(Effect.provide(unbounded))
      return {
        _tag: "Postgres" as const,
        sql: clients.bounded,
        pg: clients.bounded,
        blobs: blobs.bounded,
        migrationIds: parts.migrations.map((migration) => migration.id)
      }
    })
  )

/** Memory or Postgres, as SERVICE_DATABASE_URL says; the serving process's store is bounded. */
export const layer = (parts: SchemaParts) =>
  Layer.unwrap(Effect.gen(function*() {
    const url = yield* databaseUrl
    if (url === undefined) return layerMemory
    return layerPostgres(url, parts, yield* storeTimeoutSetting)
  }))

/** The Postgres clients of a `Postgres` storage, as the layers that need them expect them. */
export const clientsOf = (storage: Extract<Storage, { _tag: "Postgres" }>): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient> =>
  Layer.mergeAll(Layer.succeed(SqlClient.SqlClient, storage.sql), Layer.succeed(PgClient.PgClient, storage.pg))

/** A feature's layer on the storage in use: `memory` without a database, `postgres` with one. */
export const onStorage = <A, E1, R1, E2, R2>(
  memory: Layer.Layer<A, E1, R1>,
  postgres: Layer.Layer<A, E2, R2>
): Layer.Layer<A, E1 | E2, R1 | Exclude<R2, SqlClient.SqlClient | PgClient.PgClient> | Database> => {
  type Chosen = Layer.Layer<A, E1 | E2, R1 | Exclude<R2, SqlClient.SqlClient | PgClient.PgClient>>
  // One layer per storage value: every feature that asks for this one shares its instance.
  const chosen = new WeakMap<Storage, Chosen>()
  const choose = (storage: Storage): Chosen => {
    if (storage._tag === "Memory") return memory
    let onPostgres = chosen.get(storage)
    if (onPostgres === undefined) {
      onPostgres = postgres.pipe(Layer.provide(clientsOf(storage)))
      chosen.set(storage, onPostgres)
    }
    return onPostgres
  }
  return Layer.unwrap<A, E1 | E2, R1 | Exclude<R2, SqlClient.SqlClient | PgClient.PgClient>, never, Database>(
    Database.useSync(choose)
  )
}

/** True with a database: for the few choices that are not a whole layer. */
export const isDurable = Database.useSync((storage) => storage._tag === "Postgres")
