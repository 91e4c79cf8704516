/**
 * Runs `actorNode.ts` as a real child process (a cluster runner on a shared Postgres) and talks
 * to its control endpoint.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Schema } from "effect"
import { freePort } from "../../support/Ports.ts"
import { CounterReply } from "./CounterEntity.ts"

const decodeReply = Schema.decodeUnknownSync(CounterReply)
const decodeShards = Schema.decodeUnknownSync(Schema.Struct({ held: Schema.Int }))

const SCRIPT = fileURLToPath(new URL("./actorNode.ts", import.meta.url))

export interface ActorProcess {
  readonly pid: number
  readonly process: ChildProcess
  readonly output: () => string
  readonly increment: (id: string, options?: { readonly timeoutMs?: number }) => Promise<CounterReply>
  /** How many of the group's shards this runner holds now. */
  readonly shards: () => Promise<number>
  readonly kill9: () => Promise<void>
  readonly stop: () => Promise<void>
}

export { freePort }

const getJson = async (url: string, timeoutMs: number): Promise<unknown> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
  const body: unknown = await response.json()
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`)
  return body
}

export const startActorProcess = async (databaseUrl: string): Promise<ActorProcess> => {
  const [runnerPort, controlPort] = [await freePort(), await freePort()]
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      ...process.env,
      SERVICE_DATABASE_URL: databaseUrl,
      SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
      SERVICE_RUNNER_ADDRESS: `127.0.0.1:${runnerPort}`,
      ACTOR_CONTROL_PORT: String(controlPort)
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  const exited = new Promise<void>((done) => child.once("exit", () => done()))
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("actor node ready")) resolve()
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("exit", (code) => reject(new Error(`actor node exited with ${code} before it was ready:\n${output}`)))
    setTimeout(() => reject(new Error(`actor node did not start in 30 s:\n${output}`)), 30_000).unref()
  })
  const base = `http://127.0.0.1:${controlPort}`
  const stopWith = (signal: NodeJS.Signals) => async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    await exited
  }
  return {
    pid: child.pid ?? 0,
    process: child,
    output: () => output,
    increment: async (id, options) =>
      decodeReply(await getJson(`${base}/increment?id=${encodeURIComponent(id)}`, options?.timeoutMs ?? 30_000)),
    shards: async () => decodeShards(await getJson(`${base}/shards`, 5_000)).held,
    kill9: stopWith("SIGKILL"),
    stop: stopWith("SIGTERM")
  }
}
