/**
 * The one entry point: `serve`, `migrate`, `keys`, `projections`, `events`, each with --help.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { Command } from "effect/cli"
import { AppLive } from "./App.ts"
import { preflight } from "./Preflight.ts"
import { events } from "./cli/Events.ts"
import { keys } from "./cli/Keys.ts"
import { migrate } from "./cli/Migrate.ts"
import { projections } from "./cli/Projections.ts"
import { reportingConfig } from "./cli/Shared.ts"

const serve = Command.make("serve", {}, () => reportingConfig(Effect.andThen(preflight, Layer.launch(AppLive)))).pipe(
  Command.withDescription("Run the service (in memory without SERVICE_DATABASE_URL, on Postgres with it)")
)

const root = Command.make("service").pipe(
  Command.withDescription("Runs catalog tools, stages files and delivers signed webhooks."),
  Command.withSubcommands([serve, migrate, keys, projections, events])
)

root.pipe(
  Command.run({ version: "0.1.0" }),
  Effect.provide(NodeServices.layer),
  NodeRuntime.runMain({ disableErrorReporting: false })
)
