/**
 * `npm run bench`: starts the raw node:http baseline and the service (in memory, and on a
 * throwaway Postgres database when one is reachable) as child processes on loopback, runs every
 * scenario of `scenarios/index.ts` under `wrk` (bench/WrkLoad.ts; without wrk, loudly, the Node
 * load generator in a worker thread), and prints a table. The memory service runs twice: as
 * configured, and with SERVICE_HTTP_END_OF_TURN=false (answers written as each finishes rather
 * than together at the end of the loop's turn), so the batching is judged in the same run.
 *
 * BENCH_SECONDS (default 5) per measurement after a BENCH_WARMUP_SECONDS (default 1) warm-up,
 * BENCH_CONNECTIONS (default 32) concurrent keep-alive connections, BENCH_SCENARIOS (comma
 * separated names) to run a subset, BENCH_POSTGRES=off to skip the database target.
 */
import { createBenchDatabase, type BenchDatabase } from "./Database.ts"
import { measure } from "./load.ts"
import { hasWrk, measureWrk, warnFallback } from "./WrkLoad.ts"
import { type Server, startRawServer, startService } from "./Processes.ts"
import type { BenchContext, Measurement, Target } from "./Scenario.ts"
import { scenarios as allScenarios } from "./scenarios/index.ts"
import { formatTable } from "./Table.ts"

const positive = (name: string, fallback: number): number => {
  const raw = process.env[name]
  if (raw === undefined || raw === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name}: expected a positive number, got "${raw}"`)
  return value
}

const seconds = positive("BENCH_SECONDS", 5)
const warmupSeconds = positive("BENCH_WARMUP_SECONDS", 1)
const connections = Math.round(positive("BENCH_CONNECTIONS", 32))
const wanted = process.env.BENCH_SCENARIOS?.split(",").map((s) => s.trim()).filter((s) => s !== "")
const scenarios = wanted === undefined ? allScenarios : allScenarios.filter((s) => wanted.includes(s.name))

// A made-up key for this run only; the limits are high so the bucket never answers 429.
const KEY = `bench_${Date.now().toString(36)}_key_0001`
const LIMIT = "1000000000"
const serviceEnv: Record<string, string> = {
  SERVICE_API_KEYS: `${KEY}=proj_bench`,
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: LIMIT,
  SERVICE_RATE_LIMIT_REQUEST_BURST: LIMIT,
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: LIMIT,
  SERVICE_RATE_LIMIT_EXECUTE_BURST: LIMIT,
  SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "off",
  ...Object.assign({}, ...scenarios.map((s) => s.env ?? {}))
}

const log = (line: string) => process.stderr.write(`${line}\n`)

const main = async () => {
  const servers: Array<Server> = []
  let database: BenchDatabase | undefined
  try {
    warnFallback()
    log(`bench: ${scenarios.map((s) => s.name).join(", ")}; ${seconds} s per measurement after ${warmupSeconds} s warm-up, ${connections} connections, ${hasWrk ? "wrk" : "Node load generator"}`)
    const raw = await startRawServer()
    servers.push(raw)
    const targets: Array<Target> = []
    const memory = await startService(serviceEnv)
    servers.push(memory)
    targets.push({ name: "memory", baseUrl: memory.baseUrl, key: KEY })
    const unbatched = await startService({ ...serviceEnv, SERVICE_HTTP_END_OF_TURN: "false" })
    servers.push(unbatched)
    targets.push({ name: "memory, no end-of-turn", baseUrl: unbatched.baseUrl, key: KEY })
    database = process.env.BENCH_POSTGRES === "off" ? undefined : await createBenchDatabase()
    if (database === undefined) log("bench: no reachable Postgres, measuring the memory service only")
    else {
      const pg = await startService({
        ...serviceEnv,
        SERVICE_DATABASE_URL: database.url,
        SERVICE_SECRET_KEY: Buffer.alloc(32, 11).toString("base64")
      })
      servers.push(pg)
      targets.push({ name: "postgres", baseUrl: pg.baseUrl, key: KEY })
    }
    const context: BenchContext = {
      seconds,
      warmupSeconds,
      connections,
      targets,
      rawBaseUrl: raw.baseUrl,
      load: (spec) =>
        hasWrk ? measureWrk({ seconds, warmupSeconds, connections, ...spec }) : measure({ seconds, warmupSeconds, connections, ...spec })
    }
    const rows: Array<Measurement> = []
    for (const scenario of scenarios) {
      log(`bench: running ${scenario.name}`)
      rows.push(...(await scenario.run(context)))
    }
    process.stdout.write(`\n${formatTable(rows)}\n`)
    if (rows.some((r) => r.failures > 0)) {
      process.stdout.write("\nSome requests failed (see the failed column); their latencies are not in the percentiles.\n")
    }
  } finally {
    for (const server of servers.toReversed()) await server.stop()
    if (database !== undefined) await database.drop()
  }
}

await main()
