/**
 * The load generator: N keep-alive connections, each sending its next request as soon as the
 * previous answer is read, for a warm-up and then a measured window. It runs in a worker thread
 * of the harness, so it shares an event loop with neither the measured server (a child process)
 * nor the harness itself.
 */
import { Agent, request } from "node:http"
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads"

export interface LoadSpec {
  readonly url: string
  readonly method?: string
  readonly headers?: Readonly<Record<string, string>>
  /** Sent with every request (uploads); its size counts towards `bytesPerSecond`. */
  readonly body?: string | Uint8Array
  readonly connections: number
  readonly seconds: number
  readonly warmupSeconds: number
  /** Status counted as a success; anything else is a failure. Default 200. */
  readonly expectStatus?: number
}

export interface LoadResult {
  readonly requests: number
  readonly failures: number
  /** Status code (or "error") to count, for failures. */
  readonly failureKinds: Readonly<Record<string, number>>
  readonly requestsPerSecond: number
  /** Request body bytes of successful requests per second. */
  readonly bytesPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
}

const percentile = (sorted: Float64Array, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))
  return sorted[index] ?? Number.NaN
}

const runLoad = async (spec: LoadSpec): Promise<LoadResult> => {
  const url = new URL(spec.url)
  const agent = new Agent({ keepAlive: true, maxSockets: spec.connections })
  const expect = spec.expectStatus ?? 200
  const body = spec.body === undefined ? undefined : typeof spec.body === "string" ? Buffer.from(spec.body) : spec.body
  const headers: Record<string, string> = { ...spec.headers }
  if (body !== undefined) headers["content-length"] = String(body.byteLength)
  const start = performance.now()
  const measureFrom = start + spec.warmupSeconds * 1000
  const end = measureFrom + spec.seconds * 1000
  const latencies: Array<number> = []
  const failureKinds: Record<string, number> = {}
  let bodyBytes = 0

  const once = () =>
    new Promise<void>((resolve) => {
      const sent = performance.now()
      const done = (kind: string | undefined) => {
        const now = performance.now()
        if (sent >= measureFrom && now <= end) {
          if (kind === undefined) {
            latencies.push(now - sent)
            bodyBytes += body?.byteLength ?? 0
          } else failureKinds[kind] = (failureKinds[kind] ?? 0) + 1
        }
        resolve()
      }
      const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method ?? "GET", headers, agent }, (res) => {
        res.on("data", () => {})
        res.on("end", () => done(res.statusCode === expect ? undefined : String(res.statusCode)))
        res.on("error", () => done("error"))
      })
      req.on("error", () => done("error"))
      req.end(body)
    })

  const connection = async () => {
    while (performance.now() < end) await once()
  }
  await Promise.all(Array.from({ length: spec.connections }, connection))
  agent.destroy()
  const sorted = Float64Array.from(latencies).toSorted()
  const failures = Object.values(failureKinds).reduce((a, b) => a + b, 0)
  return {
    requests: latencies.length,
    failures,
    failureKinds,
    requestsPerSecond: latencies.length / spec.seconds,
    bytesPerSecond: bodyBytes / spec.seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99)
  }
}

/** Runs one measurement in a fresh worker thread. */
export const measure = (spec: LoadSpec): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { load: spec } })
    worker.once("message", (result: LoadResult) => {
      resolve(result)
      void worker.terminate()
    })
    worker.once("error", reject)
    worker.once("exit", (code) => {
      if (code !== 0) reject(new Error(`load worker exited with ${code}`))
    })
  })

if (!isMainThread && parentPort !== null && (workerData as { load?: LoadSpec } | undefined)?.load !== undefined) {
  const port = parentPort
  void runLoad((workerData as { load: LoadSpec }).load).then((result) => port.postMessage(result))
}
