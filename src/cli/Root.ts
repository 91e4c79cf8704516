/**
 * The command line (started by src/main.ts): `serve`, `migrate`, `keys`, `projections`, `events`, `secrets`, each with
 * --help. Every command logs through the service's loggers (infra/observability/Logging.ts). A
 * failed start is one line and exit 1 (cli/StartupFailure.ts); SIGTERM or SIGINT stops the
 * service cleanly (http/server/Drain.ts) and exits 0; any other command it cuts short exits
 * 130 or 143 with a line saying so (cli/Stopping.ts).
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Runtime } from "effect"
import { CliOutput, Command } from "effect/cli"
import * as Logging from "../../infra/observability/Logging.ts"
import * as Telemetry from "../../infra/observability/Telemetry.ts"
import { AppLive } from "../App.ts"
import { preflight } from "../Preflight.ts"
import { events } from "./Events.ts"
import { keys } from "./Keys.ts"
import { migrate } from "./Migrate.ts"
import { projections } from "./Projections.ts"
import { secrets } from "./Secrets.ts"
import { cutShort, stopStatus } from "./Stopping.ts"
import { reportingConfig } from "./Shared.ts"
import { reportingStartup } from "./StartupFailure.ts"

/** The service, its OTLP export around it; after a stop, one last line once every layer has closed. */
const service = Layer.launch(AppLive.pipe(Layer.provide(Telemetry.layer))).pipe(
  Effect.onInterrupt(() => Effect.logInfo("stopped: requests answered, leases released"))
)

// The service logs on stdout (decisions.md section 9); the other commands print their data there
// (`events tail | jq`), so their logs go to stderr.
const serve = Command.make("serve", {}, () =>
  reportingStartup(reportingConfig(Effect.andThen(preflight, service))).pipe(Effect.provide(Logging.layer))).pipe(
  Command.withDescription("Run the service (in memory without SERVICE_DATABASE_URL, on Postgres with it)")
)

const root = Command.make("service").pipe(
  Command.withDescription("Runs catalog tools, stages files and delivers signed webhooks."),
  Command.withSubcommands([serve, migrate, keys, projections, events, secrets])
)

/** The first stop signal received; the runtime's own handlers interrupt the command. */
let stopSignal: NodeJS.Signals | undefined
const noteSignal = (signal: NodeJS.Signals) => {
  stopSignal ??= signal
}
process.on("SIGINT", noteSignal)
process.on("SIGTERM", noteSignal)

/**
 * A stop asked for by a signal is a clean end (exit 0) for `serve` and `events tail`; any other
 * command was cut short before its work was done (cli/Stopping.ts): a line on stderr and
 * 128 + the signal's number. A command may say more itself (`projections replay` names the
 * projection it stopped in, and marks that it did by setting an exit code): then only the
 * status is added.
 */
const teardown: Runtime.Teardown = (exit, onExit) => {
  process.off("SIGINT", noteSignal)
  process.off("SIGTERM", noteSignal)
  if (!Exit.isFailure(exit) || !Cause.hasInterruptsOnly(exit.cause)) return Runtime.defaultTeardown(exit, onExit)
  // The command said where it stopped itself (it set an exit code): only the status is left.
  if (typeof process.exitCode === "number") return onExit(stopStatus(stopSignal ?? "SIGINT"))
  return onExit(cutShort(stopSignal ?? "SIGINT") ?? 0)
}

/**
 * Usage asked for (`--help`, or a command given without its subcommand) goes to stdout; usage
 * shown because the command line could not be parsed goes to stderr with the error, as any
 * failure's output does, so that stdout stays data.
 */
const presenter = CliOutput.layerPresenter({
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.gen(function*() {
        const formatter = yield* CliOutput.Formatter
        yield* Console.error(formatter.formatHelpDoc(event.helpDoc))
        yield* Console.error(formatter.formatErrors(event.errors))
      })
      : CliOutput.defaultPresenter.present(event)
})

root.pipe(
  Command.run({ version: "0.1.0" }),
  Effect.provide(presenter),
  Effect.provide(NodeServices.layer),
  Effect.provide(Logging.layerTo("stderr")),
  NodeRuntime.runMain({ disableErrorReporting: false, teardown })
)
