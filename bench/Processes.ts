/**
 * The measured servers, each a child process on loopback: the service (`node src/main.ts serve`),
 * the raw `node:http` baseline and the framework's floors. Each listens on a port the OS picks and
 * announces it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

export interface Server {
  readonly baseUrl: string
  /** The child's process id (its CPU time is read from /proc). */
  readonly pid: number | undefined
  readonly stop: () => Promise<void>
}

const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url))
const RAW = fileURLToPath(new URL("./raw-server.ts", import.meta.url))
const FLOORS = fileURLToPath(new URL("./effect-floors.ts", import.meta.url))
const LISTENING = /listening on (?:\S*:)?(\d+)/

const start = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<Server> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${args.join(" ")} did not start in 60 s:\n${output}`))
    }, 60_000)
    const onData = (chunk: Buffer) => {
      // Only the start-up output is kept; afterwards the pipes are drained and dropped.
      if (output.length > 64 * 1024) return
      output += chunk.toString()
      const match = LISTENING.exec(output)
      if (match === null) return
      clearTimeout(timer)
      output = "x".repeat(64 * 1024 + 1)
      resolve({
        baseUrl: `http://127.0.0.1:${match[1]}`,
        pid: child.pid,
        stop: async () => {
          child.kill("SIGTERM")
          const killer = setTimeout(() => child.kill("SIGKILL"), 5_000)
          await exited
          clearTimeout(killer)
        }
      })
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`${args.join(" ")} exited with ${code} before listening:\n${output}`))
    })
  })

export const startService = (env: Readonly<Record<string, string>>): Promise<Server> =>
  start([MAIN, "serve"], { SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0", ...env })

export const startRawServer = (): Promise<Server> => start([RAW], {})

/** `GET /v1/me`'s answer through Effect's HTTP server alone (`router`) or an Effect HttpApi (bench/effect-floors.ts). */
export const startEffectFloor = (mode: "router" | "httpapi"): Promise<Server> => start([FLOORS, mode], {})
