/** The command line as an operator runs it: `node src/main.ts …args`, to completion. */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a command with only the given SERVICE_* variables (none from this process's environment). */
export const runCli = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, ...args], { env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] })
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
