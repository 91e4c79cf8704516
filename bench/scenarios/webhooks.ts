/**
 * Webhook delivery benchmark: deliveries per second to a local HTTPS receiver across 1, 10 and
 * 100 endpoints, the latency from the terminal execution event's append to the receiver
 * (p50, p99), and the service's CPU per delivery, in memory and on Postgres. A first row per
 * target appends terminal executions of a project without endpoints: what following the log
 * costs the service per execution.
 *
 * Self-contained: it starts its own services, because it appends synthetic terminal execution
 * events straight to the log (the executions feature's contract): memory mode runs the service
 * in this process (the receiver's certificate joins this process's trust store), Postgres mode
 * runs it as a child process with NODE_EXTRA_CA_CERTS and appends through its own event store
 * on the same database. The receiver runs in a worker thread. Service CPU is this thread's CPU
 * time in memory mode (it includes the appends and the kernel's loopback work of the writes) and
 * the child's utime + stime on Postgres. Two runs per endpoint count: a burst (saturation:
 * deliveries/s) and a paced run below saturation (latency).
 *
 * Standalone: `node bench/scenarios/webhooks.ts` prints the rows.
 */
import { Effect, Layer, ManagedRuntime, References } from "effect"
import { HttpServer } from "effect/http"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { fileURLToPath } from "node:url"
import { postgresCpu, processCpu } from "../ProcessCpu.ts"
import type { Measurement } from "../Scenario.ts"
import { AppLive } from "../../src/App.ts"
import { configLayer } from "../../test/support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../test/support/Database.ts"
import { appendTerminal, pgLog } from "../../test/support/Executions.ts"
import { type Client, makeClient, startProcess } from "../../test/support/Service.ts"
import { makeCertificate } from "../../test/support/WebhookReceiver.ts"
import { startReceiverThread } from "../WebhookReceiverThread.ts"
import { createEndpoint, freePort, KEYS } from "../../test/support/Webhooks.ts"


const ENDPOINT_COUNTS = (process.env.BENCH_WEBHOOK_ENDPOINTS ?? "1,10,100").split(",").map(Number)
const TARGETS = (process.env.BENCH_WEBHOOK_TARGETS ?? "memory,postgres").split(",")
/** Deliveries per burst run; events = DELIVERIES / endpoints. */
const DELIVERIES = Number(process.env.BENCH_WEBHOOK_DELIVERIES ?? 4000)
/** Deliveries per second offered in the paced (latency) run. */
const PACED_RATE = Number(process.env.BENCH_WEBHOOK_PACED_RATE ?? 200)
const PACED_SECONDS = Number(process.env.BENCH_WEBHOOK_PACED_SECONDS ?? 4)

const pgNote = (us: number | undefined) => (us === undefined ? "" : ` (Postgres server ${Math.round(us)})`)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

type Append = (project: string) => Promise<{ readonly eventId: string }>

interface Target {
  readonly name: string
  readonly client: Client
  readonly append: Append
  /** CPU seconds used by the service so far. */
  readonly cpu: () => number
  readonly close: () => Promise<void>
}

const serviceEnv = (certPath: string): Record<string, string> => ({
  SERVICE_API_KEYS: KEYS,
  NODE_EXTRA_CA_CERTS: certPath,
  SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "6000000"
})

const memoryTarget = async (cert: string, certPath: string): Promise<Target> => {
  const original = getCACertificates("default")
  setDefaultCACertificates([...original, cert])
  const config = configLayer({ ...serviceEnv(certPath), SERVICE_HOST: "127.0.0.1", SERVICE_PORT: "0" })
  // Warnings only: a line per request of the service would be written (and paid for) by the
  // benchmark's own process, which also runs the load.
  const runtime = ManagedRuntime.make(AppLive.pipe(Layer.provide(config), Layer.provide(Layer.succeed(References.MinimumLogLevel, "Warn"))))
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return {
    name: "memory",
    client: makeClient(`http://127.0.0.1:${address.port}`),
    append: (project) => runtime.runPromise(appendTerminal(`proj_${project}`, "succeeded")),
    cpu: threadCpu,
    close: async () => {
      await runtime.dispose()
      setDefaultCACertificates(original)
    }
  }
}

const postgresTarget = async (certPath: string): Promise<Target | undefined> => {
  if (!postgresAvailable) return undefined
  const url = await createTestDatabase("benchwh")
  const service = await startProcess({
    ...serviceEnv(certPath),
    SERVICE_DATABASE_URL: url,
    SERVICE_SECRET_KEY: Buffer.alloc(32, 9).toString("base64"),
    ...(process.env.BENCH_WEBHOOK_SERVICE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_WEBHOOK_SERVICE_NODE_OPTIONS } : {})
  }, await freePort())
  const log = pgLog(url)
  return {
    name: "postgres",
    client: service,
    append: (project) => log.runPromise(appendTerminal(`proj_${project}`, "succeeded")),
    cpu: () => processCpu(service.process.pid!),
    close: async () => {
      if (process.env.BENCH_WEBHOOK_DEBUG) process.stderr.write(service.output().split("\n").filter((l) => l.includes("WARN")).slice(0, 60).join("\n"))
      await service.stop()
      await log.dispose()
      await dropTestDatabase(url)
    }
  }
}

/** CPU seconds the service has used so far in memory mode (on Postgres: the child's /proc entry). */
const threadCpu = (): number => {
  const usage = process.threadCpuUsage()
  return (usage.user + usage.system) / 1e6
}

export const run = async (): Promise<ReadonlyArray<Measurement>> => {
  const certificate = makeCertificate()
  const receiver = await startReceiverThread(certificate)
  const rows: Array<Measurement> = []
  const appendedAt = new Map<string, number>()
  const makers = [
    ...(TARGETS.includes("memory") ? [() => memoryTarget(certificate.cert, certificate.certPath)] : []),
    ...(TARGETS.includes("postgres") ? [() => postgresTarget(certificate.certPath)] : [])
  ]
  let projectIndex = 0
  for (const make of makers) {
    const target = await make()
    if (target === undefined) continue
    try {
      const appendAll = async (project: string, events: number, gapMs: number) => {
        const appends: Array<Promise<unknown>> = []
        for (let i = 0; i < events; i++) {
          const at = Date.now()
          appends.push(target.append(project).then((event) => appendedAt.set(event.eventId, at)))
          if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
          else if (appends.length % 64 === 0) await Promise.all(appends.slice(-64))
        }
        await Promise.all(appends)
      }
      // Zero endpoints: what following the log costs the service per terminal execution.
      {
        const project = `p${++projectIndex}`
        await appendAll(project, 200, 0)
        await new Promise((resolve) => setTimeout(resolve, 1000))
        const events = DELIVERIES
        const cpu0 = target.cpu()
        const started = Date.now()
        await appendAll(project, events, 0)
        await new Promise((resolve) => setTimeout(resolve, 1000))
        const cpuUs = ((target.cpu() - cpu0) * 1e6) / events
        rows.push({
          scenario: "webhooks none", target: target.name, throughput: Math.round(events / ((Date.now() - started - 1000) / 1000)), unit: "req/s",
          p50Ms: 0, p99Ms: 0, requests: events, failures: 0,
          note: `0 endpoints; service CPU ${Math.round(cpuUs)} us per terminal event${target.name === "memory" ? " (includes the append itself)" : " (appends come from the bench)"}`
        })
      }
      for (const count of ENDPOINT_COUNTS) {
        // A fresh project per run, so earlier endpoints do not receive this run's events.
        const burstProject = `p${++projectIndex}`
        const pacedProject = `p${++projectIndex}`
        for (const project of [burstProject, pacedProject]) {
          for (let i = 0; i < count; i++) await createEndpoint(target.client, project, receiver.url(`/${project}/${i}`))
        }
        const measure = async (project: string, events: number, gapMs: number) => {
          await receiver.reset()
          const expected = events * count
          const cpu0 = target.cpu()
          const pg0 = target.name === "postgres" ? postgresCpu() : 0
          const started = Date.now()
          await appendAll(project, events, gapMs)
          const deadline = Date.now() + 120_000
          const done = () => receiver.received() >= expected || Date.now() >= deadline
          while (!done()) await new Promise((resolve) => setTimeout(resolve, 5))
          const seconds = (Date.now() - started) / 1000
          const cpuUs = ((target.cpu() - cpu0) * 1e6) / Math.max(1, receiver.received())
          const pgUs = target.name === "postgres" ? ((postgresCpu() - pg0) * 1e6) / Math.max(1, receiver.received()) : undefined
          const arrivals = await receiver.arrivals()
          const sorted = arrivals.flatMap((a) => {
            const sent = appendedAt.get(a.eventId)
            return sent === undefined ? [] : [a.at - sent]
          }).toSorted((a, b) => a - b)
          return { rate: arrivals.length / seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99), received: arrivals.length, expected, cpuUs, pgUs }
        }
        const burst = await measure(burstProject, Math.max(1, Math.round(DELIVERIES / count)), 0)
        rows.push({
          scenario: "webhooks burst", target: target.name, throughput: Math.round(burst.rate), unit: "req/s",
          p50Ms: burst.p50, p99Ms: burst.p99, requests: burst.received, failures: burst.expected - burst.received,
          note: `${count} endpoint(s), deliveries/s at saturation; service CPU ${Math.round(burst.cpuUs)} us/delivery${pgNote(burst.pgUs)}; latency includes queueing`
        })
        const pacedEvents = Math.max(1, Math.round((PACED_RATE * PACED_SECONDS) / count))
        const gap = (PACED_SECONDS * 1000) / pacedEvents
        const paced = await measure(pacedProject, pacedEvents, gap)
        rows.push({
          scenario: "webhooks paced", target: target.name, throughput: Math.round(paced.rate), unit: "req/s",
          p50Ms: paced.p50, p99Ms: paced.p99, requests: paced.received, failures: paced.expected - paced.received,
          note: `${count} endpoint(s), ~${PACED_RATE} deliveries/s offered; service CPU ${Math.round(paced.cpuUs)} us/delivery${pgNote(paced.pgUs)}; append → receiver latency`
        })
      }
    } finally {
      await target.close()
    }
  }
  await receiver.close()
  return rows
}

export const webhooks = { name: "webhooks", run }
export default webhooks

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rows = await run()
  for (const r of rows) {
    process.stdout.write(`${r.scenario.padEnd(16)} ${r.target.padEnd(9)} ${String(r.throughput).padStart(7)} ${r.unit}  p50 ${String(r.p50Ms).padStart(5)} ms  p99 ${String(r.p99Ms).padStart(5)} ms  n=${r.requests} missing=${r.failures}  ${r.note ?? ""}\n`)
  }
  process.exit(0)
}
