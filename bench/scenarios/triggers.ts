/**
 * Trigger ingestion benchmark (issue "Trigger subscriptions", item 8), `wrk` driving the ingest
 * URL, the service as a child process, in memory and on Postgres:
 *
 * - throughput: `wrk -t1` at 64 and at 128 connections (BENCH_TRIGGER_CONNECTIONS) POSTs
 *   `event_callback`s with distinct event ids to a push subscription (a fresh one per run) whose
 *   one endpoint is inactive (every event is admitted, recorded and fanned out to no target, so
 *   only ingestion is measured); the figure is 202s per second, with the service's and Postgres's
 *   CPU per ingest (target: at least 3,000/s on Postgres, judged on the better run), and "no
 *   losses" means every 202 has its accepted history row (at most one row per connection more:
 *   requests in flight when wrk stopped);
 * - latency: 200 events/s across 100 subscriptions, each naming its own endpoint of 100 on a local
 *   HTTPS receiver (a worker thread); wrk paces its connections with Lua's `delay()`, the gap
 *   shortened by the answer time two 3 s warm-ups measured (they also open the lanes' TLS
 *   connections), so that the rate is 200/s. The latency is from the event's receivedAt (the
 *   service's clock when it took the request, the envelope's createdAt) to its arrival at the
 *   receiver (target: p99 under 100 ms); wrk's own p99 is the ingest answer's. An event that
 *   reaches the receiver twice is counted ("twice").
 *
 * The service's CPU per event (and Postgres's, when it runs here) is printed with the latency.
 *
 *   node bench/scenarios/triggers.ts   (BENCH_SECONDS=10, BENCH_TRIGGER_TARGETS=memory,postgres, BENCH_TRIGGER_RATE=200,
 *                                       BENCH_TRIGGER_NODE_OPTIONS="--cpu-prof" to profile the service,
 *                                       BENCH_TRIGGER_LATENCY=off for the throughput runs alone)
 */
import { fileURLToPath } from "node:url"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../test/support/Database.ts"
import { type ChildService, startProcess } from "../../test/support/Service.ts"
import { allHistory, createTriggerEndpoint, ingestPath, subscribe } from "../../test/support/Triggers.ts"
import { makeCertificate } from "../../test/support/WebhookReceiver.ts"
import { freePort } from "../../test/support/Webhooks.ts"
import { postgresCpu, processCpu } from "../ProcessCpu.ts"
import { startReceiverThread } from "../WebhookReceiverThread.ts"
import { runWrk, type WrkResult } from "../Wrk.ts"

const SECONDS = Number(process.env.BENCH_SECONDS ?? "10")
const TARGETS = (process.env.BENCH_TRIGGER_TARGETS ?? "memory,postgres").split(",")
const RATE = Number(process.env.BENCH_TRIGGER_RATE ?? "200")
const ENDPOINTS = 100
/**
 * Ingest is a closed loop (each connection waits for its answer), so at 64 connections the
 * service and Postgres leave part of the two cores idle; 128 finds the peak (256 was past it:
 * longer queues, no more throughput). The target is judged on the better of the two.
 */
const CONNECTIONS = (process.env.BENCH_TRIGGER_CONNECTIONS ?? "64,128").split(",").map(Number)
/** `off` skips the paced latency run (for profiling the throughput runs alone). */
const LATENCY = process.env.BENCH_TRIGGER_LATENCY !== "off"
const PACED_CONNECTIONS = 20
const KEY = "bench_key_triggers_00001"
const ROOMY = {
  SERVICE_API_KEYS: `${KEY}=proj_bench`,
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000000",
  SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  SERVICE_WEBHOOK_MAX_ENDPOINTS_PER_PROJECT: "1000",
  // One project posts thousands of events a second here: the per-project ingest budget is off.
  SERVICE_INGEST_BYTES_PER_MINUTE: "0"
}

const wrk = (url: string, script: string, connections: number, seconds: number): Promise<WrkResult> =>
  runWrk(url, script, { connections, seconds })

const callback = (prefix: string) =>
  `string.format('{"type":"event_callback","event_id":"Ev${prefix}_%d","event_time":1700000000,"event":{"type":"ping","n":%d}}', n, n)`

/** Distinct event ids (one Lua state: -t1), all to one ingest path. */
const throughputScript = (path: string, prefix: string) => `
local n = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, "${path}", nil, ${callback(prefix)})
end
`

/** Round-robin over the paths, each connection waiting `gap` ms after each answer. */
const pacedScript = (paths: ReadonlyArray<string>, prefix: string, gapMs: number) => `
local n = 0
local paths = { ${paths.map((path) => `"${path}"`).join(", ")} }
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  n = n + 1
  return wrk.format(nil, paths[(n % #paths) + 1], nil, ${callback(prefix)})
end
delay = function()
  return ${gapMs}
end
`

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const sleep = (msToWait: number) => new Promise((resolve) => setTimeout(resolve, msToWait))

interface Target {
  readonly name: string
  readonly service: ChildService
  /** Accepted history rows of a subscription, and those still selecting. */
  readonly rows: (subscriptionId: string) => Promise<{ readonly accepted: number; readonly selecting: number }>
  readonly close: () => Promise<void>
}

const start = async (name: string, certPath: string): Promise<Target | undefined> => {
  const env = { ...ROOMY, NODE_EXTRA_CA_CERTS: certPath, ...(process.env.BENCH_TRIGGER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_TRIGGER_NODE_OPTIONS } : {}) }
  if (name === "memory") {
    const service = await startProcess(env, await freePort())
    return {
      name,
      service,
      rows: async (subscriptionId) => {
        const rows = await allHistory(service, `?subscriptionId=${subscriptionId}`, KEY)
        return { accepted: rows.filter((row) => row.dedupStatus === "accepted").length, selecting: rows.filter((row) => row.deliveryStatus === "selecting").length }
      },
      close: () => service.stop()
    }
  }
  if (!postgresAvailable) return undefined
  const url = await createTestDatabase("benchtrg")
  const service = await startProcess({ ...env, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 4).toString("base64") }, await freePort())
  return {
    name,
    service,
    rows: async (subscriptionId) => {
      const [row] = await runSql<{ accepted: string; selecting: string }>(url, `
        SELECT count(*) FILTER (WHERE e.dedup_status = 'accepted')::text AS accepted,
               count(*) FILTER (WHERE p.phase = 'selecting')::text AS selecting
        FROM v_trigger_events e JOIN v_trigger_event_progress p USING (arrival_id) WHERE e.subscription_id = '${subscriptionId}'`)
      return { accepted: Number(row?.accepted ?? 0), selecting: Number(row?.selecting ?? 0) }
    },
    close: async () => {
      await service.stop()
      await dropTestDatabase(url)
    }
  }
}

export type Burst = WrkResult & {
  readonly connections: number
  readonly perSecond: number
  readonly rows: number
  readonly lost: number
  readonly extra: number
  readonly cpuUs: number
  readonly pgUs: number
}

export interface TriggerFigures {
  readonly target: string
  /** One per connection count (CONNECTIONS). */
  readonly bursts: ReadonlyArray<Burst>
  /** Absent when BENCH_TRIGGER_LATENCY=off. */
  readonly paced?: WrkResult & { readonly cpuUs: number; readonly pgUs: number; readonly delivered: number; readonly duplicates: number; readonly p50Ms: number; readonly p99Ms: number; readonly ingestP50Ms: number; readonly ingestP99Ms: number }
}

/** From now on: the service's and Postgres's CPU, in microseconds per operation, when asked. */
const cpuMeter = (service: ChildService) => {
  const cpu0 = processCpu(service.process.pid!)
  const pg0 = postgresCpu()
  return (operations: number) => ({
    cpuUs: ((processCpu(service.process.pid!) - cpu0) * 1e6) / Math.max(1, operations),
    pgUs: ((postgresCpu() - pg0) * 1e6) / Math.max(1, operations)
  })
}

/** wrk at `connections` against one ingest path; every 202 checked against the accepted rows. */
const burst = async (target: Target, path: string, subscriptionId: string, prefix: string, connections: number): Promise<Burst> => {
  const { service } = target
  const before = await target.rows(subscriptionId)
  const meter = cpuMeter(service)
  const result = await wrk(service.baseUrl, throughputScript(path, prefix), connections, SECONDS)
  const ok = result.requests - result.non2xx
  const { cpuUs, pgUs } = meter(ok)
  let counted = await target.rows(subscriptionId)
  for (let i = 0; i < 100 && counted.selecting > 0; i++) {
    await sleep(100)
    counted = await target.rows(subscriptionId)
  }
  const rows = counted.accepted - before.accepted
  return {
    ...result,
    connections,
    perSecond: Math.round((ok / SECONDS) * 10) / 10,
    rows,
    lost: Math.max(0, ok - rows),
    extra: Math.max(0, rows - ok),
    cpuUs,
    pgUs
  }
}

export const run = async (): Promise<ReadonlyArray<TriggerFigures>> => {
  const certificate = makeCertificate()
  const receiver = await startReceiverThread(certificate)
  const figures: Array<TriggerFigures> = []
  /** Waits (10 s at most) until the receiver has had `count` deliveries since its reset. */
  const delivered = async (count: number) => {
    for (let i = 0; i < 100 && receiver.received() < count; i++) await sleep(100)
  }
  try {
    for (const name of TARGETS) {
      const target = await start(name, certificate.certPath)
      if (target === undefined) continue
      try {
        const { service } = target
        // Throughput: a subscription per run (its rows are counted alone), its endpoint inactive.
        const idle = await createTriggerEndpoint(service, "https://127.0.0.1:1/never", { key: KEY, active: false })
        const fresh = () => subscribe(service, { trigger: "demo.event", userId: "bench", webhookEndpointIds: [idle.endpointId] }, KEY)
        await wrk(service.baseUrl, throughputScript(ingestPath(await fresh()), `warm${name}`), CONNECTIONS[0]!, 2)
        const bursts: Array<Burst> = []
        for (const connections of CONNECTIONS) {
          const subscription = await fresh()
          bursts.push(await burst(target, ingestPath(subscription), subscription.subscriptionId, `run${connections}${name}`, connections))
        }
        if (!LATENCY) {
          figures.push({ target: name, bursts })
          continue
        }
        // Latency: 100 subscriptions, one endpoint each, on the receiver.
        const paths: Array<string> = []
        const pacedSubscriptions: Array<string> = []
        for (let i = 0; i < ENDPOINTS; i++) {
          const endpoint = await createTriggerEndpoint(service, receiver.url(`/${name}/${i}`), { key: KEY, events: ["trigger.demo.event"] })
          const subscription = await subscribe(service, { trigger: "demo.event", userId: "bench", webhookEndpointIds: [endpoint.endpointId] }, KEY)
          pacedSubscriptions.push(subscription.subscriptionId)
          paths.push(ingestPath(subscription))
        }
        // wrk waits `gap` after each answer, so a connection's cycle is the gap plus the answer's
        // time: each warm-up (the first at the nominal gap; they also open the lanes' TLS
        // connections) measures that time and shortens the gap by it, so that the rate is RATE.
        const cycle = (PACED_CONNECTIONS * 1000) / RATE
        let gap = Math.round(cycle)
        for (const round of [1, 2]) {
          await receiver.reset()
          const warmPaced = await wrk(service.baseUrl, pacedScript(paths, `warmpaced${round}${name}`, gap), PACED_CONNECTIONS, 3)
          const answerMs = Math.max(0, (PACED_CONNECTIONS * 1000) / Math.max(1, warmPaced.requestsPerSecond) - gap)
          gap = Math.max(1, Math.round(cycle - answerMs))
          await delivered(warmPaced.requests - warmPaced.non2xx)
        }
        await sleep(500)
        await receiver.reset()
        const meter = cpuMeter(service)
        const paced = await wrk(service.baseUrl, pacedScript(paths, `paced${name}`, gap), PACED_CONNECTIONS, SECONDS)
        const expected = paced.requests - paced.non2xx
        await delivered(expected)
        await sleep(500)
        const { cpuUs, pgUs } = meter(expected)
        const arrivals = await receiver.arrivals()
        const distinct = new Set(arrivals.map((arrival) => arrival.eventId)).size
        const receivedAt = new Map<string, number>()
        for (const subscriptionId of pacedSubscriptions) {
          for (const row of await allHistory(service, `?subscriptionId=${subscriptionId}`, KEY)) receivedAt.set(row.eventId, Date.parse(row.receivedAt))
        }
        const latencies = arrivals.flatMap((arrival) => {
          const at = receivedAt.get(arrival.eventId)
          return at === undefined ? [] : [arrival.at - at]
        }).toSorted((a, b) => a - b)
        figures.push({
          target: name,
          bursts,
          paced: { ...paced, cpuUs, pgUs, delivered: distinct, duplicates: arrivals.length - distinct, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), ingestP50Ms: paced.p50Ms, ingestP99Ms: paced.p99Ms }
        })
      } finally {
        await target.close()
      }
    }
  } finally {
    await receiver.close()
  }
  return figures
}

export const print = (figures: ReadonlyArray<TriggerFigures>) => {
  for (const f of figures) {
    const best = Math.max(...f.bursts.map((b) => b.perSecond))
    for (const a of f.bursts) {
      process.stdout.write(
        `triggers ingest   ${f.target.padEnd(9)} ${String(a.perSecond).padStart(8)} accepted/s  wrk -c${a.connections} p50 ${a.p50Ms.toFixed(1)} ms p99 ${a.p99Ms.toFixed(1)} ms  service CPU ${Math.round(a.cpuUs)} us/ingest (Postgres ${Math.round(a.pgUs)})` +
          `  202s=${a.requests - a.non2xx} rows=${a.rows} lost=${a.lost} (in flight at the end: ${a.extra}) non2xx=${a.non2xx} socket errors=${a.errors}\n`
      )
    }
    const lost = f.bursts.reduce((sum, b) => sum + b.lost, 0)
    if (f.target === "postgres") process.stdout.write(`triggers ingest   ${f.target.padEnd(9)} ${String(best).padStart(8)} accepted/s at best, ${lost} lost  target >= 3000/s with no losses: ${best >= 3000 && lost === 0 ? "met" : "MISSED"}\n`)
    const p = f.paced
    if (p === undefined) continue
    process.stdout.write(
      `triggers latency  ${f.target.padEnd(9)} ${String(Math.round(p.requestsPerSecond)).padStart(8)} events/s   ${ENDPOINTS} endpoints  ingest → receiver p50 ${p.p50Ms} ms p99 ${p.p99Ms} ms` +
        `  (ingest answer p50 ${p.ingestP50Ms.toFixed(1)} ms, p99 ${p.ingestP99Ms.toFixed(1)} ms)  service CPU ${Math.round(p.cpuUs)} us/event (Postgres ${Math.round(p.pgUs)})  delivered ${p.delivered}/${p.requests - p.non2xx} (${p.duplicates} twice)  target p99 < 100 ms: ${p.p99Ms < 100 ? "met" : "MISSED"}\n`
    )
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  print(await run())
  process.exit(0)
}
