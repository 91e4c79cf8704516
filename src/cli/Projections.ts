/**
 * `projections status` and `projections replay [NAME]`: checkpoints and lag, and rebuilding a
 * projection from the log into fresh tables that are swapped in while the API keeps serving.
 */
import { Effect, Option } from "effect"
import { Argument, Command } from "effect/cli"
import { projectionStatus, replayProjection, type ReplayProgress } from "../../infra/eventlog/ProjectionAdmin.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { projections as allProjections } from "../App.ts"
import { fail, print, printTable, withDatabase } from "./Shared.ts"

const projectionNames = allProjections.map((projection) => projection.name)

/** A progress bar redrawn in place, on a terminal only: piped output gets the final count alone. */
const bar = (name: string, { done, target }: ReplayProgress) =>
  Effect.sync(() => {
    if (process.stderr.isTTY !== true) return
    const width = 30
    const ratio = target === 0 ? 1 : Math.min(1, done / target)
    const filled = Math.round(ratio * width)
    process.stderr.write(`\r${name} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${(ratio * 100).toFixed(0).padStart(3)}% ${done}/${target} events`)
  })

const status = Command.make("status", {}, () =>
  withDatabase(
    Effect.gen(function*() {
      const rows = yield* projectionStatus
      if (rows.length === 0) return yield* print("no projections")
      yield* printTable(["NAME", "MODE", "CHECKPOINT", "LAG"], rows.map((row) => [row.name, row.mode, row.checkpoint, String(row.lag)]))
    }),
    { readOnly: true }
  )).pipe(Command.withDescription("Print each projection's checkpoint and lag (events not yet projected)"))

const replay = Command.make(
  "replay",
  {
    name: Argument.String("name").pipe(
      Argument.withDescription(`Projection to rebuild, one of: ${projectionNames.join(", ")}; all when omitted`),
      Argument.optional
    )
  },
  ({ name }) => {
    const wanted = Option.getOrUndefined(name)
    // Refused before the database is touched (a typo needs no connection to be told).
    if (wanted !== undefined && !projectionNames.includes(wanted)) {
      return fail(`projections replay: unknown projection ${wanted}; known: ${projectionNames.join(", ") || "none"}`)
    }
    return withDatabase(
      Effect.gen(function*() {
        const all = yield* Projections
        if (wanted === undefined && all.length === 0) return yield* print("no projections")
        const chosen = wanted === undefined ? all : all.filter((p) => p.name === wanted)
        for (const projection of chosen) {
          const count = yield* replayProjection(projection, (progress) => bar(projection.name, progress)).pipe(
            // Stopped (Ctrl-C, SIGTERM): say which one; the exit code set marks that it was said,
            // and the command line ends as an interrupted command does (130 or 143, cli/Root.ts).
            Effect.onInterrupt(() =>
              Effect.sync(() => {
                process.stderr.write(`\ninterrupted: ${projection.name} keeps its tables as they were (those listed as rebuilt above are in place)\n`)
                process.exitCode = 130
              })
            )
          )
          if (process.stderr.isTTY === true) process.stderr.write("\n")
          yield* print(`${projection.name}: rebuilt from ${count} events and swapped in`)
        }
      })
    )
  }
).pipe(Command.withDescription("Rebuild projections from the event log into fresh tables and swap them in"))

export const projections = Command.make("projections").pipe(
  Command.withDescription("Inspect and rebuild projections"),
  Command.withSubcommands([status, replay])
)
