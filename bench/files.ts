/**
 * Upload throughput of POST /v1/files (decoded MiB/s) for 64 KiB and 5 MiB files, next to a raw
 * `node:http` baseline that reads the same JSON bodies, parses them and base64-decodes the
 * content, so the service's overhead reads as a ratio on the same machine in the same run. Then
 * what a large upload costs everyone else: GET /v1/me every 5 ms beside one connection uploading
 * 25 MiB files back to back (the probe's latency, as a small request sees the loop the uploads
 * hold), against the same beside the baseline.
 *
 * Standalone: `node bench/files.ts` starts the service (in memory) and the baseline as child
 * processes and prints the figures. BENCH_SECONDS (default 5) per measurement,
 * BENCH_FILE_SERVICE_URL + BENCH_FILE_KEY to measure an already running service instead.
 * As a scenario: `runFilesBench({ targets })` (the service must run with `filesBenchEnv`).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { Agent, createServer, request } from "node:http"
import { fileURLToPath, pathToFileURL } from "node:url"

export interface FileBenchTarget {
  readonly name: string
  readonly baseUrl: string
  /** An unpinned project key. */
  readonly key: string
}

/** One table row; the same shape as the bench runner's `Measurement`. */
export interface FileBenchRow {
  readonly scenario: string
  readonly target: string
  readonly throughput: number
  readonly unit: "MiB/s" | "req/s"
  readonly p50Ms: number
  readonly p99Ms: number
  readonly requests: number
  readonly failures: number
  readonly note?: string
}

const MIB = 1024 * 1024
export const FILE_SIZES: ReadonlyArray<{ readonly label: string; readonly bytes: number; readonly connections: number }> = [
  { label: "64 KiB", bytes: 64 * 1024, connections: 8 },
  { label: "5 MiB", bytes: 5 * MIB, connections: 4 }
]

/** Service settings the scenario needs: no 429s, and uploads that expire quickly. */
export const filesBenchEnv: Readonly<Record<string, string>> = {
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1000000000",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "1000000000",
  SERVICE_FILE_TTL_MS: "5000",
  // Throughput, not the project's share of the store, is measured here.
  SERVICE_FILE_PROJECT_MAX_BYTES: String(Number.MAX_SAFE_INTEGER)
}

const uploadBody = (bytes: number): Buffer => {
  const content = Buffer.alloc(bytes)
  for (let i = 0; i < bytes; i++) content[i] = (i * 31 + 7) & 0xff
  return Buffer.from(JSON.stringify({ name: "bench.bin", mimeType: "application/octet-stream", content: content.toString("base64") }))
}

interface LoadResult {
  readonly requests: number
  readonly failures: number
  readonly seconds: number
  readonly latencies: ReadonlyArray<number>
}

const post = (agent: Agent, url: URL, key: string, body: Buffer): Promise<number> =>
  new Promise((resolve) => {
    const req = request({
      agent,
      host: url.hostname,
      port: url.port,
      path: "/v1/files",
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": body.length }
    }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", () => resolve(0))
    req.end(body)
  })

/** `connections` keep-alive loops posting `body` for `seconds`. */
const load = async (baseUrl: string, key: string, body: Buffer, connections: number, seconds: number): Promise<LoadResult> => {
  const url = new URL(baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  // A short warm-up, not counted.
  await Promise.all(Array.from({ length: connections }, () => post(agent, url, key, body)))
  const latencies: Array<number> = []
  let failures = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(Array.from({ length: connections }, async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now()
      const status = await post(agent, url, key, body)
      if (status === 201) latencies.push(performance.now() - t0)
      else failures++
    }
  }))
  const elapsed = (performance.now() - started) / 1000
  agent.destroy()
  return { requests: latencies.length, failures, seconds: elapsed, latencies }
}

const get = (agent: Agent, url: URL, key: string): Promise<number> =>
  new Promise((resolve) => {
    const req = request({ agent, host: url.hostname, port: url.port, path: "/v1/me", headers: { authorization: `Bearer ${key}` } }, (res) => {
      res.resume()
      res.on("end", () => resolve(res.statusCode ?? 0))
    })
    req.on("error", () => resolve(0))
    req.end()
  })

/** The largest upload: 25 MiB decoded, a 35 MB JSON body. */
const LARGEST = { label: "25 MiB", bytes: 25 * MIB - 1024 }

/** GET /v1/me every 5 ms for `seconds` while one connection uploads `body` back to back. */
const beside = async (baseUrl: string, key: string, body: Buffer, seconds: number) => {
  const url = new URL(baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets: 2 })
  const latencies: Array<number> = []
  let failures = 0
  let uploads = 0
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all([
    (async () => {
      while (performance.now() < deadline) {
        if ((await post(agent, url, key, body)) === 201) uploads++
        else failures++
      }
    })(),
    (async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now()
        if ((await get(agent, url, key)) === 200) latencies.push(performance.now() - t0)
        else failures++
        await new Promise((done) => setTimeout(done, 5))
      }
    })()
  ])
  agent.destroy()
  return { latencies, failures, uploads, seconds: (performance.now() - started) / 1000 }
}

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0

const toRow = (target: string, size: { label: string; bytes: number }, result: LoadResult, note?: string): FileBenchRow => {
  const sorted = result.latencies.toSorted((a, b) => a - b)
  return {
    scenario: `POST /v1/files ${size.label}`,
    target,
    throughput: (result.requests * size.bytes) / MIB / result.seconds,
    unit: "MiB/s",
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    requests: result.requests,
    failures: result.failures,
    ...(note !== undefined ? { note } : {})
  }
}

/** The baseline server: read the body, JSON.parse, base64-decode the content, answer 201. */
export const rawDecodingServer = () =>
  createServer((req, res) => {
    if (req.method === "GET") return void res.writeHead(200, { "content-type": "application/json" }).end(`{"projectId":"raw"}`)
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const parsed = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { name: string; content: string }
      const bytes = Buffer.from(parsed.content, "base64")
      const answer = JSON.stringify({ fileId: "file_raw", name: parsed.name, size: bytes.length })
      res.writeHead(201, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) })
      res.end(answer)
    })
  })

const SELF = fileURLToPath(import.meta.url)
const MAIN = fileURLToPath(new URL("../src/main.ts", import.meta.url))

interface Child {
  readonly baseUrl: string
  readonly stop: () => Promise<void>
}

const startChild = (args: ReadonlyArray<string>, env: Readonly<Record<string, string>>): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const exited = new Promise<void>((done) => child.once("exit", () => done()))
    const onData = (chunk: Buffer) => {
      if (output.length > 64 * 1024) return
      output += chunk.toString()
      const match = /listening on (?:\S*:)?(\d+)/.exec(output)
      if (match === null) return
      output = "x".repeat(64 * 1024 + 1)
      resolve({
        baseUrl: `http://127.0.0.1:${match[1]}`,
        stop: async () => {
          child.kill("SIGTERM")
          await exited
        }
      })
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("exit", (code) => reject(new Error(`${args.join(" ")} exited with ${code}:\n${output}`)))
  })

/** Measures every target and the raw baseline at both sizes; ratios are in the notes. */
export const runFilesBench = async (options: {
  readonly targets: ReadonlyArray<FileBenchTarget>
  readonly seconds?: number
}): Promise<ReadonlyArray<FileBenchRow>> => {
  const seconds = options.seconds ?? 5
  const raw = await startChild([SELF, "--raw-server"], {})
  const rows: Array<FileBenchRow> = []
  try {
    for (const size of FILE_SIZES) {
      const body = uploadBody(size.bytes)
      const baseline = await load(raw.baseUrl, "raw", body, size.connections, seconds)
      const baselineRow = toRow("raw node:http (parse + decode)", size, baseline, "baseline")
      rows.push(baselineRow)
      for (const target of options.targets) {
        const result = await load(target.baseUrl, target.key, body, size.connections, seconds)
        const measured = toRow(target.name, size, result)
        const ratio = baselineRow.throughput === 0 ? 0 : measured.throughput / baselineRow.throughput
        rows.push({ ...measured, note: `${(ratio * 100).toFixed(0)}% of raw MiB/s` })
      }
    }
    const largest = uploadBody(LARGEST.bytes)
    for (const target of [{ name: "raw node:http (parse + decode)", baseUrl: raw.baseUrl, key: "raw" }, ...options.targets]) {
      const result = await beside(target.baseUrl, target.key, largest, seconds)
      const sorted = result.latencies.toSorted((a, b) => a - b)
      rows.push({
        scenario: `GET beside ${LARGEST.label} uploads`,
        target: target.name,
        throughput: result.latencies.length / result.seconds,
        unit: "req/s",
        p50Ms: percentile(sorted, 0.5),
        p99Ms: percentile(sorted, 0.99),
        requests: result.latencies.length,
        failures: result.failures,
        note: `max ${(sorted[sorted.length - 1] ?? 0).toFixed(0)} ms, ${(result.uploads * LARGEST.bytes / MIB / result.seconds).toFixed(0)} MiB/s uploaded`
      })
    }
  } finally {
    await raw.stop()
  }
  return rows
}

const printRows = (rows: ReadonlyArray<FileBenchRow>) => {
  for (const r of rows) {
    process.stdout.write(
      `${r.scenario.padEnd(28)} ${r.target.padEnd(32)} ${r.throughput.toFixed(1).padStart(8)} ${r.unit}  ` +
        `p50 ${r.p50Ms.toFixed(1)} ms  p99 ${r.p99Ms.toFixed(1)} ms  ${r.requests} ok  ${r.failures} failed` +
        `${r.note !== undefined ? `  (${r.note})` : ""}\n`
    )
  }
}

const standalone = async () => {
  const seconds = Number(process.env.BENCH_SECONDS ?? "5")
  const external = process.env.BENCH_FILE_SERVICE_URL
  if (external !== undefined) {
    printRows(await runFilesBench({ targets: [{ name: "service", baseUrl: external, key: process.env.BENCH_FILE_KEY ?? "" }], seconds }))
    return
  }
  const key = `bench_files_${Date.now().toString(36)}_key`
  const service = await startChild([MAIN, "serve"], {
    ...filesBenchEnv,
    SERVICE_API_KEYS: `${key}=proj_bench`,
    SERVICE_HOST: "127.0.0.1",
    SERVICE_PORT: "0"
  })
  try {
    printRows(await runFilesBench({ targets: [{ name: "service (memory)", baseUrl: service.baseUrl, key }], seconds }))
  } finally {
    await service.stop()
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes("--raw-server")) {
    const server = rawDecodingServer()
    server.keepAliveTimeout = 60_000
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address !== null && typeof address === "object") process.stdout.write(`listening on ${address.port}\n`)
    })
    process.on("SIGTERM", () => server.close(() => process.exit(0)))
  } else {
    standalone().catch((error: unknown) => {
      process.stderr.write(`${String(error)}\n`)
      process.exitCode = 1
    })
  }
}
