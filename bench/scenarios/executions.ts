/**
 * Benchmark: sync `demo.echo` executions per second with p50/p99 latency, in memory and on
 * Postgres (a throwaway database), beside two baselines measured in the same run: a raw
 * `node:http` JSON POST server, and raw single-row INSERT commits on the same Postgres.
 *
 * HTTP load comes from `wrk` (bench/WrkLoad.ts; a key per request in turn, two clients per
 * project); without wrk, loudly, from Node clients in this process. The memory service also runs
 * with SERVICE_HTTP_END_OF_TURN=false in the same rounds, so the end-of-turn batching of answers
 * (http/server/EndOfTurn.ts) is judged against writing each answer as it finishes.
 *
 * Servers run as child processes (the raw baseline too), so the load generator does not share
 * their event loop; the machine's two cores are still shared by everything, so besides ops/s the
 * table shows each server's CPU time per operation (from /proc), which contention distorts less,
 * and on Postgres the local database server's CPU time per operation too.
 *
 * This machine's speed drifts by tens of percent between minutes, so the HTTP rows and the raw
 * Postgres row run BENCH_REPEATS times (3 by default), interleaved: each cell shows the run with
 * the median rate, the range column every run's rate, and a ratio is the median of the ratios of
 * runs made side by side.
 *
 * Standalone: `node bench/scenarios/executions.ts` (BENCH_SECONDS, BENCH_WARMUP_SECONDS,
 * BENCH_CLIENTS, BENCH_PEAK_CLIENTS, BENCH_ENGINE_CONCURRENCY, BENCH_REPEATS tune it).
 * Over 300 lines on purpose: one experiment whose rows are ratios of each other, run in
 * interleaved rounds, kept whole so that a README figure can be reproduced from one file.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { spawn } from "node:child_process"
import { Agent, request } from "node:http"
import { availableParallelism } from "node:os"
import { fileURLToPath, pathToFileURL } from "node:url"
import { createTestDatabase, dropTestDatabase, postgresAvailable, TEST_DATABASE_URL } from "../../test/support/Database.ts"
import { freePort } from "../../test/support/Ports.ts"
import { runEngine } from "../engine.ts"
import { postgresCpu, processCpu } from "../ProcessCpu.ts"
import { startService } from "../Processes.ts"
import { hasWrk, measureWrk, warnFallback } from "../WrkLoad.ts"

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
/** Unmeasured load first, so every server is measured with its hot paths compiled (the service
 * takes about 10 s of load to reach its steady CPU per request). */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 10)
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32)
/**
 * The Postgres row again with more clients: with 32 each commit carries about 11 appends and the
 * service waits on Postgres; more clients fill the commits and find the service's peak rate.
 */
const PEAK_CLIENTS = Number(process.env.BENCH_PEAK_CLIENTS ?? 128)
/** Projects for `clients` clients: demo allows 4 concurrent executions per project, so two each. */
const projectsFor = (clients: number) => Math.max(1, Math.ceil(clients / 2))
const REPEATS = Math.max(1, Number(process.env.BENCH_REPEATS ?? 3))

interface Result {
  readonly name: string
  readonly ops: number
  readonly perSecond: number
  readonly p50: number
  readonly p99: number
  readonly errors: number
  /** Server CPU (user + system) per operation, microseconds; undefined when not measured. */
  readonly cpuUs?: number | undefined
  /** CPU of the local Postgres processes per operation, microseconds; undefined when not measured. */
  readonly dbCpuUs?: number | undefined
  /** The lowest and highest rate of the repeated runs this one is the median of. */
  readonly range?: readonly [number, number] | undefined
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = values.toSorted((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The run with the median rate (a real run, so its columns agree), with the range of all of them. */
const medianRun = (runs: ReadonlyArray<Result>): Result => {
  const sorted = runs.toSorted((a, b) => a.perSecond - b.perSecond)
  const chosen = sorted[Math.floor((sorted.length - 1) / 2)]!
  return { ...chosen, range: [sorted[0]!.perSecond, sorted[sorted.length - 1]!.perSecond] }
}

/** Runs every row `REPEATS` times, interleaved: the rows of one round share the machine's mood. */
const rounds = async (rows: ReadonlyArray<() => Promise<Result>>): Promise<ReadonlyArray<ReadonlyArray<Result>>> => {
  const runs: Array<Array<Result>> = rows.map(() => [])
  for (let round = 0; round < REPEATS; round++) {
    for (const [i, row] of rows.entries()) runs[i]!.push(await row())
  }
  return runs
}

/** The median, over rounds, of `a`'s rate over `b`'s in the same round. */
const pairedRatio = (a: ReadonlyArray<Result>, b: ReadonlyArray<Result>): number =>
  median(a.map((x, i) => x.perSecond / b[i]!.perSecond))

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/** Runs `clients` loops of `op` for `seconds` (after the warm-up) and times each call. */
const load = async (
  name: string,
  clients: number,
  seconds: number,
  op: (client: number) => Promise<boolean>,
  pid?: number,
  database = false
): Promise<Result> => {
  const warmUntil = Date.now() + WARMUP_SECONDS * 1000
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    while (Date.now() < warmUntil) await op(c)
  }))
  const latencies: Array<number> = []
  let errors = 0
  const cpuStart = pid === undefined ? 0 : processCpu(pid)
  const dbStart = database ? postgresCpu() : 0
  const start = performance.now()
  const until = start + seconds * 1000
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    while (performance.now() < until) {
      const t = performance.now()
      const ok = await op(c)
      latencies.push(performance.now() - t)
      if (!ok) errors++
    }
  }))
  const elapsed = (performance.now() - start) / 1000
  const perOp = (cpuSeconds: number) => (1e6 * cpuSeconds) / Math.max(1, latencies.length)
  const cpuUs = pid === undefined ? undefined : perOp(processCpu(pid) - cpuStart)
  const dbCpuUs = database ? databaseCpuUs(perOp(postgresCpu() - dbStart)) : undefined
  latencies.sort((a, b) => a - b)
  return {
    name,
    ops: latencies.length,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    errors,
    cpuUs,
    dbCpuUs
  }
}

/**
 * The same measurement under wrk: `clients` connections POSTing `BODY` to `url`, keys in turn;
 * the server's CPU (and the local Postgres's) per request over the measured run.
 */
const wrkLoad = async (name: string, url: string, clients: number, pid: number | undefined, database = false, keys: ReadonlyArray<string> = []): Promise<Result> => {
  const spec = {
    url,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: BODY,
    authorizations: keys.map((key) => `Bearer ${key}`),
    connections: clients,
    seconds: SECONDS,
    warmupSeconds: 0
  }
  await measureWrk({ ...spec, seconds: WARMUP_SECONDS })
  const cpuStart = pid === undefined ? 0 : processCpu(pid)
  const dbStart = database ? postgresCpu() : 0
  const result = await measureWrk(spec)
  const perOp = (cpuSeconds: number) => (1e6 * cpuSeconds) / Math.max(1, result.requests)
  return {
    name,
    ops: result.requests,
    perSecond: result.requestsPerSecond,
    p50: result.p50Ms,
    p99: result.p99Ms,
    errors: result.failures,
    cpuUs: pid === undefined ? undefined : perOp(processCpu(pid) - cpuStart),
    dbCpuUs: database ? databaseCpuUs(perOp(postgresCpu() - dbStart)) : undefined
  }
}

/** Postgres CPU per op, when the server runs on this machine (otherwise nothing moved). */
const databaseCpuUs = (us: number | undefined): number | undefined => (us !== undefined && us > 0 ? us : undefined)

const agent = new Agent({ keepAlive: true, maxSockets: 256 })

/** One keep-alive POST; true on the expected status. */
const postJson = (port: number, path: string, body: string, headers: Record<string, string>, expected: number) =>
  new Promise<boolean>((resolve) => {
    const req = request({ host: "127.0.0.1", port, path, method: "POST", agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode === expected))
    })
    req.on("error", () => resolve(false))
    req.end(body)
  })

const BODY = JSON.stringify({ tool: "demo.echo", input: { message: "hello", n: 1 }, userId: "bench_user" })

/** The baseline server: parse the JSON body, answer a small JSON object. */
const RAW_SERVER = `
const http = require("node:http")
const server = http.createServer((req, res) => {
  const chunks = []
  req.on("data", (chunk) => chunks.push(chunk))
  req.on("end", () => {
    const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ status: "succeeded", output: parsed.input }))
  })
})
server.listen(Number(process.argv[1]), "127.0.0.1", () => process.stdout.write("listening\\n"))
`

const rawNodeBaseline = async (): Promise<Result> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["-e", RAW_SERVER, String(port)], { stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()))
  try {
    return hasWrk
      ? await wrkLoad("raw node:http POST", `http://127.0.0.1:${port}/`, CLIENTS, child.pid)
      : await load("raw node:http POST", CLIENTS, SECONDS, () => postJson(port, "/", BODY, {}, 200), child.pid)
  } finally {
    child.kill("SIGKILL")
  }
}

/** The framework floor: a bare Effect HttpApi POST route (bench/effect-server.ts). */
const effectBaseline = async (): Promise<Result> => {
  const port = await freePort()
  const server = fileURLToPath(new URL("../effect-server.ts", import.meta.url))
  const child = spawn(process.execPath, [server, String(port)], { stdio: ["ignore", "pipe", "inherit"] })
  await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()))
  try {
    return hasWrk
      ? await wrkLoad("Effect HttpApi POST, no service", `http://127.0.0.1:${port}/v1/execute`, CLIENTS, child.pid)
      : await load("Effect HttpApi POST, no service", CLIENTS, SECONDS, () => postJson(port, "/v1/execute", BODY, {}, 200), child.pid)
  } finally {
    child.kill("SIGKILL")
  }
}

/** Fibers driving the engine without HTTP; projects keep each under demo's cap of 4. */
const ENGINE_CONCURRENCY = Number(process.env.BENCH_ENGINE_CONCURRENCY ?? 128)

const engineRow = async (name: string, env: Record<string, string>): Promise<Result> => {
  const result = await runEngine(env, {
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    concurrency: ENGINE_CONCURRENCY,
    projects: projectsFor(ENGINE_CONCURRENCY),
    externalCpu: env.SERVICE_DATABASE_URL === undefined ? undefined : postgresCpu
  })
  return {
    name,
    ops: result.executions,
    perSecond: result.perSecond,
    p50: result.p50,
    p99: result.p99,
    errors: result.failures,
    cpuUs: result.cpuUs,
    dbCpuUs: databaseCpuUs(result.externalCpuUs)
  }
}

const keys = Array.from({ length: projectsFor(Math.max(CLIENTS, PEAK_CLIENTS)) }, (_, i) => `bench_key_project_${String(i).padStart(4, "0")}`)
const ROOMY = {
  SERVICE_API_KEYS: keys.map((key, i) => `${key}=proj_bench_${i}`).join(","),
  SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000000",
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "100000000",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000000"
}

const serviceRun = async (name: string, env: Record<string, string>, clients = CLIENTS): Promise<Result> => {
  // Its output (a line per request) is drained and dropped by the harness (bench/Processes.ts).
  const service = await startService({ ...ROOMY, ...env })
  const port = Number(new URL(service.baseUrl).port)
  const projects = projectsFor(clients)
  const database = env.SERVICE_DATABASE_URL !== undefined
  try {
    return hasWrk
      ? await wrkLoad(name, `${service.baseUrl}/v1/execute`, clients, service.pid, database, keys.slice(0, projects))
      : await load(name, clients, SECONDS, (c) =>
        postJson(port, "/v1/execute", BODY, { authorization: `Bearer ${keys[c % projects]}` }, 200), service.pid, database)
  } finally {
    await service.stop()
  }
}

/** Single-row INSERT commits with one connection per client. */
const rawPostgresBaseline = async (url: string): Promise<Result> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    yield* sql`CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, body jsonb NOT NULL)`
    const payload = JSON.stringify({ message: "hello", n: 1 })
    return yield* Effect.promise(() =>
      load("raw Postgres single-row INSERT commit", CLIENTS, SECONDS, () =>
        Effect.runPromise(sql`INSERT INTO bench_rows (body) VALUES (${payload}::jsonb)`.pipe(Effect.as(true), Effect.orElseSucceed(() => false))), undefined, true))
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: CLIENTS })))))

const format = (results: ReadonlyArray<Result>) => {
  const rows = results.map((r) => [
    r.name,
    r.perSecond.toFixed(0),
    r.range === undefined || r.range[0] === r.range[1] ? "-" : `${r.range[0].toFixed(0)}-${r.range[1].toFixed(0)}`,
    r.p50.toFixed(2),
    r.p99.toFixed(2),
    String(r.errors),
    r.cpuUs === undefined ? "-" : r.cpuUs.toFixed(0),
    r.dbCpuUs === undefined ? "-" : r.dbCpuUs.toFixed(0)
  ])
  const header = ["scenario", "ops/s", "range ops/s", "p50 ms", "p99 ms", "errors", "server CPU us/op", "Postgres CPU us/op"]
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)))
  const line = (cells: ReadonlyArray<string>) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

export const run = async (): Promise<void> => {
  warnFallback()
  const results: Array<Result> = []
  const [rawNodeRuns, frameworkRuns, memoryRuns, unbatchedRuns] = await rounds([
    rawNodeBaseline,
    effectBaseline,
    () => serviceRun("sync demo.echo, memory", {}),
    () => serviceRun("sync demo.echo, memory, no end-of-turn", { SERVICE_HTTP_END_OF_TURN: "false" })
  ])
  const rawNode = medianRun(rawNodeRuns!)
  const framework = medianRun(frameworkRuns!)
  const memory = medianRun(memoryRuns!)
  results.push(rawNode, framework, memory, medianRun(unbatchedRuns!))
  const memoryEngine = await engineRow(`engine without HTTP, memory (${ENGINE_CONCURRENCY} fibers)`, {})
  results.push(memoryEngine)
  const cpuRatio = median(memoryRuns!.map((m, i) => (rawNodeRuns![i]!.cpuUs ?? NaN) / (m.cpuUs ?? NaN))).toFixed(2)
  const ratios = memoryRuns!.map((m, i) => (m.perSecond / rawNodeRuns![i]!.perSecond).toFixed(2)).join(", ")
  const floorRatios = memoryRuns!.map((m, i) => (m.perSecond / frameworkRuns![i]!.perSecond).toFixed(2)).join(", ")
  const notes = [
    `load: ${hasWrk ? "wrk" : "Node clients (wrk not installed: not comparable with wrk figures)"}`,
    `memory / Effect HttpApi floor: ${pairedRatio(memoryRuns!, frameworkRuns!).toFixed(2)} by throughput (rounds: ${floorRatios}; target >= 0.80)`,
    `end-of-turn batching: memory with it / without it: ${pairedRatio(memoryRuns!, unbatchedRuns!).toFixed(2)} by throughput, ` +
    `${median(memoryRuns!.map((m, i) => (unbatchedRuns![i]!.cpuUs ?? NaN) / (m.cpuUs ?? NaN))).toFixed(2)} by server CPU per op (above 1: it pays)`,
    `memory / raw node: ${pairedRatio(memoryRuns!, rawNodeRuns!).toFixed(2)} by throughput (rounds: ${ratios}), ` +
    `${cpuRatio} by server CPU per op (target >= 0.30)`,
    `Effect HttpApi floor / raw node: ${pairedRatio(frameworkRuns!, rawNodeRuns!).toFixed(2)} by throughput; the service adds ` +
    `${memory.cpuUs !== undefined && framework.cpuUs !== undefined ? (memory.cpuUs - framework.cpuUs).toFixed(0) : "-"} us of CPU per execution above it`
  ]
  if (postgresAvailable) {
    const url = await createTestDatabase("bench")
    try {
      const durable = { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }
      const [rawPgRuns, pgRuns, peakRuns] = await rounds([
        () => rawPostgresBaseline(url),
        () => serviceRun("sync demo.echo, Postgres", durable),
        () => serviceRun(`sync demo.echo, Postgres, ${PEAK_CLIENTS} clients`, durable, PEAK_CLIENTS)
      ])
      const pg = medianRun(pgRuns!)
      const peak = medianRun(peakRuns!)
      results.push(medianRun(rawPgRuns!), pg, peak)
      const pgEngine = await engineRow(`engine without HTTP, Postgres (${ENGINE_CONCURRENCY} fibers)`, durable)
      results.push(pgEngine)
      notes.push(
        `Postgres executions/s: ${pg.perSecond.toFixed(0)} through HTTP (${PEAK_CLIENTS} clients: ${peak.perSecond.toFixed(0)}), ` +
          `${pgEngine.perSecond.toFixed(0)} in the engine (target >= 3000)`
      )
      if (pg.cpuUs !== undefined && pg.dbCpuUs !== undefined) {
        // Service and database share this machine's cores with the load generator.
        const perExecution = pg.cpuUs + pg.dbCpuUs
        notes.push(
          `Postgres CPU budget through HTTP: ${perExecution.toFixed(0)} us per execution (service ${pg.cpuUs.toFixed(0)}, ` +
            `Postgres ${pg.dbCpuUs.toFixed(0)}), so ${availableParallelism()} cores cap it near ` +
            `${((availableParallelism() * 1e6) / perExecution).toFixed(0)}/s before the load generator takes its share`
        )
      }
    } finally {
      await dropTestDatabase(url)
    }
  } else {
    notes.push(`Postgres at ${TEST_DATABASE_URL} is not reachable: the durable rows are skipped`)
  }
  process.stdout.write(`\nexecutions (${CLIENTS} clients unless named, ${SECONDS} s each, two clients per project, ` +
    `median of ${REPEATS} interleaved runs where a range is shown)\n${format(results)}\n${notes.join("\n")}\n`)
  agent.destroy()
}

export const name = "executions"
export const scenario = { name, run }
export default scenario

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run()
}
