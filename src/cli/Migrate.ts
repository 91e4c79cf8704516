import { Command } from "effect/cli"
import { print, withDatabase } from "./Shared.ts"

export const migrate = Command.make("migrate", {}, () =>
  withDatabase(print("database is migrated and every projection's tables are in place"))).pipe(
  Command.withDescription("Apply pending schema migrations and create projection tables (serve does this too)")
)

