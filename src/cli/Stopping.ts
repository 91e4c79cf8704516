/**
 * What a stop signal (SIGINT, SIGTERM) means for the command being run. `serve` and
 * `events tail` run until they are stopped: a signal is their clean end, exit 0. Every other
 * command has work to finish, so a signal cuts it short: it says so on stderr and exits
 * 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), as a shell reports a command a
 * signal ended, and `migrate && …` stops there. Plain Node, no Effect: src/main.ts reads it
 * before the command line has loaded.
 */

/** Each command and its subcommands, as src/cli declares them (a test holds the two together). */
export const COMMANDS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ["serve", new Set<string>()],
  ["migrate", new Set<string>()],
  ["keys", new Set(["create", "list", "revoke"])],
  ["projections", new Set(["status", "replay"])],
  ["events", new Set(["tail"])],
  ["secrets", new Set(["reseal"])]
])

/**
 * The command and its subcommand as typed (`keys create`), or undefined without one. The
 * subcommand is the first of the command's own names after it, so a flag's value before it
 * (`events --log-level info tail`) is not taken for one.
 */
const commandOf = (argv: ReadonlyArray<string>): string | undefined => {
  const at = argv.findIndex((arg) => COMMANDS.has(arg))
  if (at === -1) return undefined
  const command = argv[at]!
  const subcommands = COMMANDS.get(command)!
  const sub = argv.slice(at + 1).find((arg) => subcommands.has(arg))
  return sub === undefined ? command : `${command} ${sub}`
}

/** Whether a stop signal ends this command line cleanly (exit 0). */
const endsCleanlyOnSignal = (argv: ReadonlyArray<string>): boolean => {
  const command = commandOf(argv)
  // No command: usage or the version, which a signal cuts short harmlessly.
  return command === undefined || command === "serve" || command === "events tail"
}

/** The exit status of a command a signal cut short: 128 + the signal's number. */
export const stopStatus = (signal: NodeJS.Signals): number => (signal === "SIGINT" ? 130 : 143)

/**
 * For a command line (the arguments after the script) stopped by `signal`: undefined when that
 * is its clean end; otherwise the line saying it was cut short and the exit status.
 */
export const stopVerdict = (
  argv: ReadonlyArray<string>,
  signal: NodeJS.Signals
): { readonly line: string; readonly status: number } | undefined =>
  endsCleanlyOnSignal(argv)
    ? undefined
    : {
      line: `interrupted (${signal}): ${commandOf(argv) ?? "the command"} stopped before it finished\n`,
      status: stopStatus(signal)
    }

/**
 * For this process's command line stopped by `signal`: undefined when that is a clean end;
 * otherwise the line saying it was cut short goes to stderr and the exit status is returned.
 */
export const cutShort = (signal: NodeJS.Signals): number | undefined => {
  const verdict = stopVerdict(process.argv.slice(2), signal)
  if (verdict === undefined) return undefined
  process.stderr.write(verdict.line)
  return verdict.status
}
