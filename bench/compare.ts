/**
 * Two checkouts of the service side by side under one load: sync `demo.echo` executions in
 * memory, half the clients on each, and each process's CPU per request over several windows.
 * This machine's speed drifts by tens of percent between minutes; run at the same moment, both
 * trees meet the same drift, so the ratio of their CPU per request shows changes of a few percent
 * that separate runs hide.
 *
 * `node bench/compare.ts <baseline checkout> [<candidate checkout>]` (the candidate defaults to
 * this one; each needs its node_modules). COMPARE_CLIENTS (per tree), COMPARE_WARMUP_SECONDS,
 * COMPARE_SECONDS and COMPARE_ROUNDS tune it. A git worktree makes a baseline:
 * `git worktree add /tmp/base HEAD~1 && ln -s $PWD/node_modules /tmp/base/`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Agent, request } from "node:http"
import { resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../test/support/Ports.ts"
import { processCpu } from "./ProcessCpu.ts"

const CLIENTS = Number(process.env.COMPARE_CLIENTS ?? 16)
const WARMUP_SECONDS = Number(process.env.COMPARE_WARMUP_SECONDS ?? 8)
const SECONDS = Number(process.env.COMPARE_SECONDS ?? 5)
const ROUNDS = Number(process.env.COMPARE_ROUNDS ?? 8)
const PROJECTS = 8

const keys = Array.from({ length: PROJECTS }, (_, i) => `bench_key_project_${String(i).padStart(4, "0")}`)
const ROOMY = {
  SERVICE_API_KEYS: keys.map((key, i) => `${key}=proj_bench_${i}`).join(","),
  SERVICE_HOST: "127.0.0.1",
  SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000000",
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "100000000",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000000"
}

interface Tree {
  readonly name: string
  readonly port: number
  readonly child: ChildProcess
}

const start = async (name: string, checkout: string): Promise<Tree> => {
  const port = await freePort()
  const { SERVICE_DATABASE_URL: _memoryOnly, ...env } = process.env
  const child = spawn(process.execPath, [resolve(checkout, "src/main.ts"), "serve"], {
    cwd: checkout,
    env: { ...env, ...ROOMY, SERVICE_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  await new Promise<void>((ready, fail) => {
    let output = ""
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (output.includes("listening on")) ready()
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", onData)
    child.once("exit", (code) => fail(new Error(`${name} exited with ${code}:\n${output}`)))
  })
  return { name, port, child }
}

const agent = new Agent({ keepAlive: true, maxSockets: 256 })
const BODY = JSON.stringify({ tool: "demo.echo", input: { message: "hello", n: 1 }, userId: "bench_user" })

const execute = (port: number, client: number) =>
  new Promise<boolean>((done) => {
    const headers = { "content-type": "application/json", authorization: `Bearer ${keys[client % PROJECTS]}` }
    const req = request({ host: "127.0.0.1", port, path: "/v1/execute", method: "POST", agent, headers }, (res) => {
      res.resume()
      res.on("end", () => done(res.statusCode === 200))
    })
    req.on("error", () => done(false))
    req.end(BODY)
  })

/** Loads both trees at once for `seconds`; requests answered per tree, and failures. */
const window = async (trees: ReadonlyArray<Tree>, seconds: number) => {
  const until = performance.now() + seconds * 1000
  const counts = trees.map(() => 0)
  let failures = 0
  await Promise.all(trees.flatMap((tree, t) =>
    Array.from({ length: CLIENTS }, async (_, client) => {
      while (performance.now() < until) {
        if (!(await execute(tree.port, client))) failures++
        counts[t]!++
      }
    })
  ))
  return { counts, failures }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = values.toSorted((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

export const compare = async (baseline: string, candidate: string): Promise<void> => {
  const trees = [await start("baseline", baseline), await start("candidate", candidate)]
  try {
    await window(trees, WARMUP_SECONDS)
    const ratios: Array<number> = []
    process.stdout.write(`baseline ${baseline}, candidate ${candidate}: server CPU per request, ${CLIENTS} clients each\n`)
    for (let round = 0; round < ROUNDS; round++) {
      const before = trees.map((tree) => processCpu(tree.child.pid!))
      const { counts, failures } = await window(trees, SECONDS)
      const perRequest = trees.map((tree, t) => (1e6 * (processCpu(tree.child.pid!) - before[t]!)) / Math.max(1, counts[t]!))
      const ratio = perRequest[1]! / perRequest[0]!
      ratios.push(ratio)
      process.stdout.write(
        `round ${round + 1}: baseline ${perRequest[0]!.toFixed(1)} us (${counts[0]} requests), candidate ` +
          `${perRequest[1]!.toFixed(1)} us (${counts[1]}), candidate/baseline ${ratio.toFixed(3)}` +
          `${failures > 0 ? `, ${failures} failed` : ""}\n`
      )
    }
    const lower = ratios.filter((ratio) => ratio < 1).length
    process.stdout.write(`median candidate/baseline ${median(ratios).toFixed(3)} (${lower} of ${ratios.length} rounds lower)\n`)
  } finally {
    for (const tree of trees) tree.child.kill("SIGKILL")
    agent.destroy()
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [baseline, candidate = resolve(fileURLToPath(new URL("..", import.meta.url)))] = process.argv.slice(2)
  if (baseline === undefined) {
    process.stderr.write("usage: node bench/compare.ts <baseline checkout> [<candidate checkout>]\n")
    process.exit(2)
  }
  await compare(resolve(baseline), resolve(candidate))
}
