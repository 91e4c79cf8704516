/**
 * Memory mode over a long run (SERVICE_MEMORY_RETENTION_MS): a steady rate of sync `demo.echo`
 * executions, each delivered to a webhook endpoint, against the service in memory twice, once
 * with a short retention window and once with retention effectively off, side by side. Every
 * few seconds it reads `/metrics`: the heap in use, and the records the service keeps (execution
 * and delivery rows, log events). With retention the records and the heap level off once the
 * window is full; without it both grow with the run. The heap per retained record is the slope
 * of heap over records kept in the run without retention.
 *
 * `node_modules/.bin/node bench/memory.ts` (BENCH_MEMORY_RATE executions/s, default 300;
 * BENCH_MEMORY_SECONDS per run, default 60; BENCH_MEMORY_RETENTION_MS, default 15000).
 */
import { Agent, request } from "node:http"
import { makeCertificate, startReceiver } from "../test/support/WebhookReceiver.ts"
import { startService } from "./Processes.ts"

const RATE = Number(process.env.BENCH_MEMORY_RATE ?? 300)
const SECONDS = Number(process.env.BENCH_MEMORY_SECONDS ?? 60)
const RETENTION_MS = Number(process.env.BENCH_MEMORY_RETENTION_MS ?? 15_000)
const SAMPLE_MS = 5_000
const KEY = "bench_memory_key_0000001"

const log = (line: string) => process.stderr.write(`${line}\n`)

interface Sample {
  readonly second: number
  readonly sent: number
  readonly heapMb: number
  readonly executions: number
  readonly deliveries: number
  readonly events: number
}

const metric = (text: string, name: string, labels = ""): number => {
  const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1))
}

const call = (agent: Agent, base: string, method: string, path: string, body?: string) =>
  new Promise<{ status: number; text: string }>((resolve) => {
    const url = new URL(path, base)
    const req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method,
      agent,
      headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { "content-type": "application/json" }) }
    }, (res) => {
      let text = ""
      res.on("data", (chunk: Buffer) => (text += chunk.toString()))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
    })
    req.on("error", () => resolve({ status: 0, text: "" }))
    req.end(body)
  })

const runOnce = async (label: string, retentionMs: number, certificatePath: string, receiverUrl: string): Promise<ReadonlyArray<Sample>> => {
  const service = await startService({
    SERVICE_API_KEYS: `${KEY}=proj_memory`,
    SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000000",
    SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "100000000",
    SERVICE_RATE_LIMIT_REQUEST_BURST: "100000000",
    SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000000",
    SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
    NODE_EXTRA_CA_CERTS: certificatePath,
    SERVICE_MEMORY_RETENTION_MS: String(retentionMs),
    // A scrape then collects garbage first: the heap gauge is the live heap (Gauges.ts).
    NODE_OPTIONS: "--expose-gc"
  })
  const agent = new Agent({ keepAlive: true, maxSockets: 32 })
  try {
    const created = await call(agent, service.baseUrl, "POST", "/v1/webhooks", JSON.stringify({ url: receiverUrl, events: ["execution.completed"] }))
    if (created.status !== 201) throw new Error(`endpoint: ${created.status} ${created.text}`)
    const samples: Array<Sample> = []
    const start = performance.now()
    let sent = 0
    let failed = 0
    // Paced: every 10 ms, the executions due by then (at most 32 in flight).
    let inFlight = 0
    const body = JSON.stringify({ tool: "demo.echo", userId: "u1", input: { text: "x".repeat(200) } })
    const pacer = setInterval(() => {
      const due = Math.floor(((performance.now() - start) / 1000) * RATE) - sent
      for (let i = 0; i < due && inFlight < 32; i++) {
        sent++
        inFlight++
        void call(agent, service.baseUrl, "POST", "/v1/execute", body).then((answer) => {
          inFlight--
          if (answer.status !== 200) failed++
        })
      }
    }, 10)
    while (performance.now() - start < SECONDS * 1000) {
      await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS))
      const text = (await call(agent, service.baseUrl, "GET", "/metrics")).text
      const sample: Sample = {
        second: Math.round((performance.now() - start) / 1000),
        sent,
        heapMb: metric(text, "nodejs_heap_used_bytes") / 1024 / 1024,
        executions: metric(text, "memory_retained_rows", '{table="executions"}'),
        deliveries: metric(text, "memory_retained_rows", '{table="webhook_deliveries"}'),
        events: metric(text, "memory_retained_events")
      }
      samples.push(sample)
      log(`${label}: ${sample.second} s, ${sample.sent} sent (${failed} failed), heap ${sample.heapMb.toFixed(1)} MB, kept ${sample.executions} executions, ${sample.deliveries} deliveries, ${sample.events} events`)
    }
    clearInterval(pacer)
    return samples
  } finally {
    agent.destroy()
    await service.stop()
  }
}

/** Least squares slope of y over x. */
const slope = (points: ReadonlyArray<readonly [number, number]>): number => {
  const n = points.length
  const mx = points.reduce((s, [x]) => s + x, 0) / n
  const my = points.reduce((s, [, y]) => s + y, 0) / n
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0)
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0)
  return den === 0 ? 0 : num / den
}

const main = async () => {
  const certificate = makeCertificate()
  const receiver = await startReceiver(certificate)
  try {
    log(`bench memory: ${RATE} executions/s for ${SECONDS} s, each delivered; retention ${RETENTION_MS} ms against none`)
    const retained = await runOnce(`retention ${RETENTION_MS / 1000} s`, RETENTION_MS, certificate.certPath, receiver.url("/memory"))
    const unbounded = await runOnce("no retention", 86_400_000, certificate.certPath, receiver.url("/memory"))
    const rows = retained.map((r, i) => {
      const u = unbounded[i]
      return `${String(r.second).padStart(6)}  ${String(r.sent).padStart(8)}  ${String(r.executions + r.deliveries).padStart(12)}  ${r.heapMb.toFixed(1).padStart(11)}  ${String(u === undefined ? "-" : u.executions + u.deliveries).padStart(14)}  ${u === undefined ? "-" : u.heapMb.toFixed(1).padStart(13)}`
    })
    // Heap per record kept: the slope of heap over records in the run that keeps everything,
    // from its second sample on (the first includes start-up and warm-up).
    const points = unbounded.slice(1).map((u) => [u.executions + u.deliveries, u.heapMb * 1024 * 1024] as const)
    const perRecord = slope(points)
    const lastRetained = retained.at(-1)
    const steady = retained.slice(Math.ceil((RETENTION_MS / SAMPLE_MS) + 1))
    process.stdout.write(
      `\nmemory mode, ${RATE} sync demo.echo/s, each delivered to one endpoint (heap: live V8 heap, after a collection)\n` +
        `second      sent  kept (ret.)  heap MB ret.  kept (no ret.)  heap MB no ret.\n${rows.join("\n")}\n` +
        `heap per retained record (execution row + delivery row, with their events and streams): ${(perRecord / 1024).toFixed(2)} KiB\n` +
        `with retention ${RETENTION_MS / 1000} s: ${lastRetained === undefined ? "-" : lastRetained.executions + lastRetained.deliveries} records kept at the end; ` +
        `heap over the steady part ${steady.length === 0 ? "-" : `${Math.min(...steady.map((s) => s.heapMb)).toFixed(1)}-${Math.max(...steady.map((s) => s.heapMb)).toFixed(1)} MB`}\n` +
        `the default 24 h window at this rate would keep ${(RATE * 2 * 86_400 / 1e6).toFixed(1)} M records, about ` +
        `${((perRecord * RATE * 2 * 86_400) / 1024 ** 3).toFixed(1)} GiB; a GiB of heap holds 24 h at ` +
        `${(1024 ** 3 / (perRecord * 2 * 86_400)).toFixed(1)} executions/s (each delivered once)\n`
    )
  } finally {
    await receiver.close()
  }
}

await main()
