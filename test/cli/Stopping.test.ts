import { describe, expect, it } from "vitest"
import { events } from "../../src/cli/Events.ts"
import { keys } from "../../src/cli/Keys.ts"
import { migrate } from "../../src/cli/Migrate.ts"
import { projections } from "../../src/cli/Projections.ts"
import { secrets } from "../../src/cli/Secrets.ts"
import { COMMANDS, stopVerdict } from "../../src/cli/Stopping.ts"

describe("what a stop signal means for a command line", () => {
  // Stopping.ts is read before the command line loads, so it names the commands itself: the same
  // names as the commands declare (`serve`, in Root.ts, has no subcommand).
  it("knows every command and subcommand the command line declares", () => {
    const declared = [migrate, keys, projections, events, secrets].map((command) =>
      [command.name, command.subcommands.flatMap((group) => group.commands.map((sub) => sub.name)).toSorted()] as const
    )
    expect(new Map([["serve", []], ...declared])).toEqual(new Map([...COMMANDS].map(([name, subs]) => [name, [...subs].toSorted()])))
  })

  it.each([
    [["serve"]],
    [["serve", "--log-level", "debug"]],
    [["--log-level", "info", "serve"]],
    [["events", "tail"]],
    [["events", "--log-level", "info", "tail"]],
    [["events", "--log-level=info", "tail", "--from-start"]],
    [["--help"]],
    [[]]
  ])("%j ends cleanly", (argv) => {
    expect(stopVerdict(argv, "SIGINT")).toBeUndefined()
  })

  it.each([
    [["migrate"], "SIGINT", "migrate", 130],
    [["keys", "create", "--project", "proj_x"], "SIGTERM", "keys create", 143],
    // A flag's value is not the subcommand: the line names the subcommand typed after it.
    [["keys", "--log-level", "debug", "create", "--project", "p"], "SIGINT", "keys create", 130],
    [["projections", "--log-level", "warn", "replay", "executions"], "SIGTERM", "projections replay", 143],
    [["secrets", "reseal"], "SIGINT", "secrets reseal", 130]
  ] as const)("%j stopped by %s is cut short: %s, exit %i", (argv, signal, command, status) => {
    expect(stopVerdict(argv, signal)).toEqual({ line: `interrupted (${signal}): ${command} stopped before it finished\n`, status })
  })
})
