/**
 * Running the service for tests: in this process on a random port (fast, inspectable), or as a
 * real child process that a test can kill -9 and restart.
 */
import { Effect, Layer, ManagedRuntime, References } from "effect"
import { HttpServer } from "effect/http"
import { spawn, type ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterAll } from "vitest"
import { AppLive } from "../../src/App.ts"
import { configLayer, type Env } from "./Config.ts"
import { dropTestDatabase, storeEnv } from "./Database.ts"
import { freePort } from "./Ports.ts"

/** Every service the whole application provides. */
export type AppServices = Layer.Success<typeof AppLive>

export const KEY = "test_key_unpinned_0001"
export const PINNED_KEY = "test_key_pinned_u1_0001"
export const OTHER_KEY = "test_key_other_project_01"
export const TEST_KEYS = `${KEY}=proj_test,${PINNED_KEY}=proj_test/user_1,${OTHER_KEY}=proj_other`

/**
 * Runner leases of 5 s instead of 20 (infra/actors/Runner.ts): a peer takes over a killed
 * process's executions and lanes within seconds, as the kill -9 tests expect to see.
 */
export const TEST_LEASE_TTL_MS = "5000"

export interface Client {
  readonly baseUrl: string
  readonly fetch: (path: string, init?: RequestInit & { readonly key?: string | null; readonly json?: unknown }) => Promise<Response>
}

export const makeClient = (baseUrl: string): Client => ({
  baseUrl,
  fetch: (path, init = {}) => {
    const headers = new Headers(init.headers)
    const key = init.key === undefined ? KEY : init.key
    if (key !== null) headers.set("authorization", `Bearer ${key}`)
    let body = init.body
    if (init.json !== undefined) {
      headers.set("content-type", "application/json")
      body = JSON.stringify(init.json)
    }
    return fetch(`${baseUrl}${path}`, { ...init, headers, body: body ?? null })
  }
})

export interface InProcessService extends Client {
  /** The running service's runtime: tests reach its services (the event store, secrets) through it. */
  readonly runtime: ManagedRuntime.ManagedRuntime<AppServices, unknown>
  readonly close: () => Promise<void>
}

/**
 * In-process services log warnings and errors only: a line per request (at info) would fill the
 * test output. A test that reads the info lines provides its own level in `around`.
 */
const QUIET = Layer.succeed(References.MinimumLogLevel, "Warn")

/**
 * Starts the whole service in this process on a random port; `around` is provided to it, as the
 * command line provides its `--log-level` (loggers, log levels).
 */
export const startService = async (env: Env = {}, around: Layer.Layer<never> = Layer.empty): Promise<InProcessService> => {
  const config = configLayer({
    SERVICE_API_KEYS: TEST_KEYS,
    SERVICE_HOST: "127.0.0.1",
    SERVICE_PORT: "0",
    SERVICE_LEASE_TTL_MS: TEST_LEASE_TTL_MS,
    ...env
  })
  const runtime = ManagedRuntime.make(AppLive.pipe(Layer.provideMerge(config), Layer.provide(Layer.merge(QUIET, around))))
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const client = makeClient(`http://127.0.0.1:${address.port}`)
  return { ...client, runtime, close: () => runtime.dispose() }
}

/** The whole service in this process on memory, or on a fresh Postgres database named after `prefix`. */
/** A service on `mode`'s store; on Postgres its fresh database is dropped when it closes (CI leaves none behind). */
export const startServiceOn = async (mode: "memory" | "postgres", prefix: string, env: Env = {}): Promise<InProcessService> => {
  const store = await storeEnv(mode, prefix)
  const service = await startService({ ...store, ...env })
  const url = store.SERVICE_DATABASE_URL
  if (url === undefined) return service
  return {
    ...service,
    close: async () => {
      await service.close()
      await dropTestDatabase(url)
    }
  }
}

export interface ChildService extends Client {
  readonly process: ChildProcess
  readonly output: () => string
  /** SIGKILL, no cleanup: what a crash looks like. */
  readonly kill9: () => Promise<void>
  readonly stop: () => Promise<void>
}

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

/** What a service process logged besides its request lines (one line each, JSON). */
export const logLines = (service: ChildService): ReadonlyArray<string> =>
  service.output().split("\n").filter((line) => !line.includes(`"message":"request"`))

/** Starts `node src/main.ts serve` and waits until it listens. */
export const startProcess = (env: Env, port: number, args: ReadonlyArray<string> = []): Promise<ChildService> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, "serve", ...args], {
      env: {
        ...process.env,
        SERVICE_API_KEYS: TEST_KEYS,
        SERVICE_HOST: "127.0.0.1",
        SERVICE_PORT: String(port),
        SERVICE_LEASE_TTL_MS: TEST_LEASE_TTL_MS,
        ...env
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("listening on")) {
        resolve({
          ...makeClient(`http://127.0.0.1:${port}`),
          process: child,
          output: () => output,
          kill9: async () => {
            child.kill("SIGKILL")
            await exited
          },
          stop: async () => {
            child.kill("SIGTERM")
            await exited
          }
        })
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => reject(new Error(`service exited with ${code} before listening:\n${output}`)))
    setTimeout(() => reject(new Error(`service did not start in 30 s:\n${output}`)), 30_000).unref()
  })

/** Two peer processes on one database, started one after the other (the second finds the schema). */
export const startPeers = async (env: Env): Promise<readonly [ChildService, ChildService]> => {
  const first = await startProcess(env, await freePort())
  return [first, await startProcess(env, await freePort())]
}

/** Steps to run after the suite, last registered first (processes before their database). */
export const cleanupAfterAll = (): Array<() => Promise<void>> => {
  const steps: Array<() => Promise<void>> = []
  afterAll(async () => {
    for (const step of steps.toReversed()) await step().catch(() => undefined)
  })
  return steps
}
