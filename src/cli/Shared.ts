/**
 * What every command needs: configuration errors reported as one line naming the variable (and
 * a non-zero exit), and, for the operator commands, the migrated database.
 */
import type { PgClient } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { type ConfigInvalid, databaseUrl } from "../../infra/Settings.ts"
import { clientsOf, layerPostgres } from "../../infra/eventlog/Database.ts"
import { Database, Projections } from "../../infra/eventlog/index.ts"
import { migrations, projections, ProjectionsLive } from "../App.ts"
import { preflight } from "../Preflight.ts"
import { fail, reportingStartup } from "./StartupFailure.ts"

export { fail }

/** A bad variable stops the command with one line naming it. */
export const reportingConfig = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Exclude<E, ConfigInvalid>, R> =>
  effect.pipe(
    Effect.catchIf(
      (error): error is Extract<E, ConfigInvalid> => (error as { _tag?: unknown } | undefined)?._tag === "ConfigInvalid",
      (error) => fail(error.message)
    )
  ) as Effect.Effect<A, Exclude<E, ConfigInvalid>, R>

type DatabaseServices = Database | SqlClient.SqlClient | PgClient.PgClient | Projections

/**
 * Runs `effect` on the migrated database of SERVICE_DATABASE_URL; without one, says so and exits.
 * Any failure (the database unreachable, a refused value) is one line on stderr and exit 1.
 * `readOnly` (the commands that only read): the database must already be migrated to this
 * version, and nothing is applied to it; an operator inspecting a database that older processes
 * serve must not change its schema under them.
 */
export const withDatabase = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: { readonly readOnly?: boolean } = {}
): Effect.Effect<A, unknown, Exclude<R, DatabaseServices>> =>
  reportingStartup(reportingConfig(Effect.gen(function*() {
    yield* preflight
    const url = yield* databaseUrl
    if (url === undefined) return yield* fail("SERVICE_DATABASE_URL: this command needs a database")
    const database = Layer.effectContext(
      Effect.gen(function*() {
        const storage = yield* Database
        if (storage._tag !== "Postgres") return yield* Effect.die(new Error("expected Postgres"))
        return yield* Layer.build(Layer.merge(clientsOf(storage), Layer.succeed(Database, storage)))
      })
    ).pipe(Layer.provide(layerPostgres(url, { migrations, projections, readOnly: options.readOnly === true })))
    return yield* Effect.provide(effect, Layer.merge(database, ProjectionsLive))
  })), "failed")

export const print = (line: string) => Effect.sync(() => process.stdout.write(`${line}\n`))

/** Rows under a header, each column as wide as its widest cell. */
export const printTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  Effect.sync(() => {
    const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)))
    const line = (cells: ReadonlyArray<string>) => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd()
    process.stdout.write([line(header), ...rows.map(line)].map((text) => `${text}\n`).join(""))
  })
