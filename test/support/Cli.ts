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
