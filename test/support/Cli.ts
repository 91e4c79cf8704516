/** The command line as an operator runs it: `node src/main.ts …args`. */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunningCli {
  readonly process: ChildProcess
  /** Its exit code and output, once it has exited (within 60 s, or it is killed and this fails). */
  readonly finished: Promise<CliRun>
}

/** Starts a command with only the given SERVICE_* variables (none from this process's environment). */
export const startCli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): RunningCli => {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  const finished = new Promise<CliRun>((resolve, reject) => {
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${args.join(" ")} did not finish in 60 s:\n${stdout}\n${stderr}`))
    }, 60_000)
    child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
  return { process: child, finished }
}

/** Runs a command to completion. */
export const runCli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<CliRun> =>
  startCli(args, env).finished

/**
 * Starts a command and sends it `signal` while it is still loading: after Node's own bootstrap
 * (before it, Node's default ends the process with no status and no word, since no program line
 * has run), well before the command line is loaded. That bootstrap takes longer on a loaded
 * machine, so a start that the signal ended that early is tried again, a little later each time.
 */
export const stopWhileLoading = async (
  args: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  signal: "SIGINT" | "SIGTERM"
): Promise<CliRun> => {
  let run: CliRun | undefined
  for (const delayMs of [150, 250, 400, 600]) {
    const child = startCli(args, { ...env, NODE_DISABLE_COMPILE_CACHE: "1" })
    await new Promise((resolve) => setTimeout(resolve, delayMs))
    child.process.kill(signal)
    run = await child.finished
    if (run.code !== null) return run
  }
  return run!
}
