/**
 * What a stop signal (SIGINT, SIGTERM) means for the command being run. `serve` and
 * `events tail` run until they are stopped: a signal is their clean end, exit 0. Every other
 * command has work to finish, so a signal cuts it short: it says so on stderr and exits
 * 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a command a
 * signal ended, and `migrate && …` stops there. Plain Node, no Effect: src/main.ts reads it
 * before the command line has loaded.
 */

const COMMANDS: ReadonlySet<string> = new Set(["serve", "migrate", "keys", "projections", "events", "secrets"])

/** The command and its subcommand as typed (`keys create`), or undefined without one. */
const commandOf = (argv: ReadonlyArray<string>): string | undefined => {
  const at = argv.findIndex((arg) => COMMANDS.has(arg))
  if (at === -1) return undefined
  const sub = argv.slice(at + 1).find((arg) => !arg.startsWith("-"))
  return sub === undefined ? argv[at] : `${argv[at]} ${sub}`
}

/** Whether a stop signal ends this command line cleanly (exit 0). */
const endsCleanlyOnSignal = (argv: ReadonlyArray<string>): boolean => {
  const command = commandOf(argv)
  // No command: usage or the version, which a signal cuts short harmlessly.
  return command === undefined || command === "serve" || command.startsWith("serve ") || command === "events tail"
}

/**
 * For this process's command line stopped by `signal`: undefined when that is a clean end;
 * otherwise the line saying it was cut short goes to stderr and the exit status is returned.
 */
export const cutShort = (signal: NodeJS.Signals): number | undefined => {
  const argv = process.argv.slice(2)
  if (endsCleanlyOnSignal(argv)) return undefined
  process.stderr.write(`interrupted (${signal}): ${commandOf(argv) ?? "the command"} stopped before it finished\n`)
  return signal === "SIGINT" ? 130 : 143
}
