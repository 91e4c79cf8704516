/**
 * The MCP gateway against the HTTP API, same run (issue "MCP gateway", item 8), in memory and on
 * Postgres:
 * - `tools/call` of `demo.echo` per second through `/mcp` next to sync `POST /v1/execute`, both
 *   driven by `wrk` (bench/Wrk.ts), alternating in rounds; the ratio is the median of the rounds
 *   (target: at least 0.7);
 * - task creation to `tasks/result` latency for `demo.sleep {ms: 0}`, one task at a time
 *   (targets: p99 under 20 ms in memory, 50 ms on Postgres).
 *
 *   node bench/scenarios/mcp.ts   (BENCH_SECONDS=5, BENCH_CONNECTIONS=32, BENCH_ROUNDS=3, BENCH_TASKS=400, BENCH_POSTGRES=off,
 *   BENCH_MEMORY=off)
 */
import { fileURLToPath } from "node:url"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../test/support/Database.ts"
import { type Server, startService } from "../Processes.ts"
import { luaScript, runWrk, wrkAvailable } from "../Wrk.ts"

const SECONDS = Number(process.env.BENCH_SECONDS ?? "5")
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? "32")
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? "3")
const TASKS = Number(process.env.BENCH_TASKS ?? "400")
const KEY = "bench_key_mcp_000000001"
const ROOMY = {
  SERVICE_API_KEYS: `${KEY}=proj_bench`,
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000000",
  SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000000",
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "100000000"
}
const VERSION = "2025-11-25"
const USER = "bench_user"

const rpc = (baseUrl: string, session: string | undefined, body: unknown) =>
  fetch(`${baseUrl}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${KEY}`,
      "content-type": "application/json",
      accept: "application/json",
      "x-service-user-id": USER,
      ...(session === undefined ? {} : { "mcp-session-id": session, "mcp-protocol-version": VERSION })
    },
    body: JSON.stringify(body)
  })

const openSession = async (baseUrl: string) => {
  const response = await rpc(baseUrl, undefined, {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: VERSION, capabilities: { tasks: {} }, clientInfo: { name: "bench", version: "1" } }
  })
  await response.text()
  const session = response.headers.get("mcp-session-id")
  if (session === null) throw new Error(`initialize answered ${response.status}`)
  await (await rpc(baseUrl, session, { jsonrpc: "2.0", method: "notifications/initialized" })).text()
  return session
}

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0
const median = (values: ReadonlyArray<number>) => percentile([...values].toSorted((a, b) => a - b), 0.5)
const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })

const throughput = async (service: Server) => {
  const session = await openSession(service.baseUrl)
  const common = { authorization: `Bearer ${KEY}`, "content-type": "application/json", "x-service-user-id": USER }
  // Ids are distinct across runs too (wrk numbers each run's requests from 1): a repeated id in
  // a session is the same call again, an idempotent replay, not a new execution.
  const mcp = (run: string) =>
    luaScript({
      method: "POST",
      path: "/mcp",
      headers: { ...common, accept: "application/json", "mcp-session-id": session, "mcp-protocol-version": VERSION },
      body: `{"jsonrpc":"2.0","id":"${run}-%d","method":"tools/call","params":{"name":"demo.echo","arguments":{"n":1}}}`
    })
  const execute = luaScript({
    method: "POST",
    path: "/v1/execute",
    headers: common,
    body: `{"tool":"demo.echo","input":{"n":%d},"userId":"${USER}"}`
  })
  const rows: Array<{ mcp: number; execute: number; mcpP99: number; executeP99: number; failures: number }> = []
  await runWrk(service.baseUrl, mcp("warm-up"), { seconds: 1, connections: CONNECTIONS })
  await runWrk(service.baseUrl, execute, { seconds: 1, connections: CONNECTIONS })
  for (let round = 0; round < ROUNDS; round++) {
    const viaMcp = await runWrk(service.baseUrl, mcp(`round-${round}`), { seconds: SECONDS, connections: CONNECTIONS })
    const viaApi = await runWrk(service.baseUrl, execute, { seconds: SECONDS, connections: CONNECTIONS })
    rows.push({
      mcp: viaMcp.requestsPerSecond,
      execute: viaApi.requestsPerSecond,
      mcpP99: viaMcp.p99Ms,
      executeP99: viaApi.p99Ms,
      failures: viaMcp.non2xx + viaMcp.errors + viaApi.non2xx + viaApi.errors
    })
  }
  return rows
}

const taskLatency = async (service: Server) => {
  const session = await openSession(service.baseUrl)
  const latencies: Array<number> = []
  for (let i = 0; i < TASKS + 50; i++) {
    const started = performance.now()
    const created = (await (await rpc(service.baseUrl, session, {
      jsonrpc: "2.0",
      id: i + 1,
      method: "tools/call",
      params: { name: "demo.sleep", arguments: { ms: 0 }, task: {} }
    })).json()) as { result?: { task?: { taskId?: string } } }
    const taskId = created.result?.task?.taskId
    if (taskId === undefined) throw new Error(`no task: ${JSON.stringify(created)}`)
    const result = (await (await rpc(service.baseUrl, session, { jsonrpc: "2.0", id: `r${i}`, method: "tasks/result", params: { taskId } })).json()) as {
      result?: { isError?: boolean }
    }
    if (result.result === undefined || result.result.isError === true) throw new Error(`task failed: ${JSON.stringify(result)}`)
    // The first fifty warm up.
    if (i >= 50) latencies.push(performance.now() - started)
  }
  const sorted = latencies.toSorted((a, b) => a - b)
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) }
}

const measure = async (name: string, env: Readonly<Record<string, string>>, p99Target: number) => {
  const service = await startService({ ...ROOMY, ...env })
  try {
    const rows = await throughput(service)
    const tasks = await taskLatency(service)
    process.stdout.write(`\nmcp, ${name}: wrk -t1 -c${CONNECTIONS}, ${SECONDS} s per round, rounds alternating\n`)
    console.table(rows.map((row, i) => ({
      round: i + 1,
      "tools/call /s": fmt(row.mcp),
      "POST /v1/execute /s": fmt(row.execute),
      ratio: fmt(row.mcp / row.execute, 2),
      "p99 mcp (ms)": fmt(row.mcpP99, 1),
      "p99 execute (ms)": fmt(row.executeP99, 1),
      "non-2xx or errors": row.failures
    })))
    const ratio = median(rows.map((row) => row.mcp / row.execute))
    process.stdout.write(`  tools/call / execute: median ${fmt(ratio, 2)} (target 0.70: ${ratio >= 0.7 ? "met" : "missed"})\n`)
    process.stdout.write(
      `  task creation to tasks/result, demo.sleep {ms: 0}, ${TASKS} tasks one at a time: p50 ${fmt(tasks.p50, 1)} ms, p99 ${fmt(tasks.p99, 1)} ms` +
        ` (target p99 < ${p99Target} ms: ${tasks.p99 < p99Target ? "met" : "missed"})\n`
    )
  } finally {
    await service.stop()
  }
}

export const run = async (): Promise<void> => {
  if (!(await wrkAvailable())) {
    process.stdout.write("mcp: SKIPPED, wrk is not installed (apt-get install -y wrk); a Node load generator would flatter the service\n")
    return
  }
  if (process.env.BENCH_MEMORY !== "off") await measure("memory", {}, 20)
  if (postgresAvailable && process.env.BENCH_POSTGRES !== "off") {
    const url = await createTestDatabase("bench_mcp")
    try {
      await measure("Postgres", { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 8).toString("base64") }, 50)
    } finally {
      await dropTestDatabase(url)
    }
  }
}

export const name = "mcp"
export const scenario = { name, run }
export default scenario

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  await run()
}
