/**
 * What every command needs: the validated configuration (a bad value stops the process with
 * one line naming the variable) and, for the operator commands, the migrated database.
 */
import { Effect, Layer } from "effect"
import type { PgClient } from "@effect/sql-pg"
import type { SqlClient } from "effect/sql"
import { AppConfig, ConfigInvalid, parseConfig } from "../Config.ts"
import { DatabaseLive, ProjectionsLive } from "../Infra.ts"
import type { Projections } from "../../infra/eventlog/Projection.ts"

const fail = (line: string): Effect.Effect<never> =>
  Effect.sync(() => {
    process.stderr.write(`error: ${line}\n`)
    process.exit(1)
  })

export const withConfig = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, AppConfig>> =>
  Effect.suspend(() => {
    const parsed = parseConfig(process.env)
    if (parsed._tag === "Failure") return fail((parsed.failure as ConfigInvalid).message)
    return Effect.provide(effect, Layer.succeed(AppConfig, parsed.success))
  })

export const withDatabase = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, unknown, Exclude<R, AppConfig | SqlClient.SqlClient | PgClient.PgClient | Projections>> =>
  withConfig(
    Effect.gen(function*() {
      const config = yield* AppConfig
      if (config.databaseUrl === undefined) return yield* fail("SERVICE_DATABASE_URL: this command needs a database")
      return yield* Effect.provide(effect, Layer.mergeAll(DatabaseLive(config.databaseUrl), ProjectionsLive))
    })
  ) as Effect.Effect<A, unknown, Exclude<R, AppConfig | SqlClient.SqlClient | PgClient.PgClient | Projections>>

export const print = (line: string) => Effect.sync(() => process.stdout.write(`${line}\n`))
