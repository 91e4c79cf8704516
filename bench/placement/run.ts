/**
 * Placement benchmark (over 300 lines: one experiment, kept whole so that its figures in
 * docs/architecture.md can be reproduced from one file): the service's actors hosted in process (today: `Executions.execute` →
 * `ExecutionActor`, the dispatcher → `WebhookLanes`) against the same work reached through an
 * Effect Cluster entity message (bench/cluster/ClusterRuntime.ts), measured side by side in one
 * run, in memory and on Postgres.
 *
 *   node_modules/.bin/node bench/placement/run.ts
 *
 * Every placement runs on the same service instance (for executions in memory: on a fresh
 * instance per measurement, see `executionsPart`), and the placements alternate round by round
 * (direct, entity, ..., direct, entity, ...), so that a ratio compares runs made a minute apart at
 * most (this 2-core machine drifts several-fold between minutes). Executions (engine level, no
 * HTTP, sync `demo.echo`, like bench/engine.ts):
 *
 * - direct: `Executions.execute` in this process;
 * - entity: `Execution` entity (ExecutionEntity.ts), a new entity id per execution (the actor is
 *   keyed by execution id), serialization simulated as the service would configure it;
 * - entity, resident: one entity id per caller fiber, so the entity already runs (the hop
 *   without the entity's start and reaping);
 * - entity, no serialization: as `entity`, on a second Sharding with
 *   `simulateRemoteSerialization: false`.
 *
 * Webhooks: deliveries from the real dispatcher and lanes to a local HTTPS receiver (worker
 * thread) across 100 endpoints, the dispatcher's hand-offs to the lanes made directly or through a
 * `WebhookLane` entity per endpoint (LaneEntity.ts). Two runs: a burst (a backlog of appended
 * terminal executions: deliveries per second at saturation, where the dispatcher hands several
 * deliveries over per message) and a paced run (one event at a time, PLACEMENT_PACED_RATE
 * deliveries/s offered: one hand-off per delivery, CPU per delivery and append → receiver
 * latency).
 *
 * Cluster: in memory `ActorRuntime.layerMemory`; on Postgres `ActorRuntime.layerSingle` over the
 * service's own pool on the service's throwaway database. The no-serialization Sharding on
 * Postgres is a second single runner, which cannot share a database with the first (the first
 * holds every shard lock), so its `cluster_*` tables live in a second throwaway database; volatile
 * messages do not touch them.
 *
 * Environment: PLACEMENT_CONCURRENCY (128 fibers), PLACEMENT_SECONDS (5 per measurement),
 * PLACEMENT_WARMUP_SECONDS (3 per placement, before the rounds), PLACEMENT_ROUNDS (3),
 * PLACEMENT_SETTLE_SECONDS (9: after each executions measurement, for the cluster's reaper, which
 * runs every 5 s, to stop that measurement's entities; its CPU is shown apart),
 * PLACEMENT_STORES (memory,postgres), PLACEMENT_PARTS (executions,webhooks), PLACEMENT_ENDPOINTS (100), PLACEMENT_PACED_RATE (1000
 * deliveries/s offered in the paced webhook run).
 */
import { NodeCrypto } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import {
  RunnerAddress,
  RunnerHealth,
  Runners,
  Sharding,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import * as Access from "../../infra/access/index.ts"
import * as Actors from "../../infra/actors/index.ts"
import { clientsOf, Database, onStorage } from "../../infra/eventlog/Database.ts"
import * as Eventlog from "../../infra/eventlog/index.ts"
import { Executions } from "../../infra/executions/Executions.ts"
import { OutboundHttp } from "../../infra/outbound/OutboundHttp.ts"
import * as WebhookDispatcher from "../../infra/webhooks/WebhookDispatcher.ts"
import * as WebhookEndpointReads from "../../infra/webhooks/WebhookEndpointReads.ts"
import { WebhookEndpoints } from "../../infra/webhooks/WebhookEndpoints.ts"
import * as WebhookEndpointsModule from "../../infra/webhooks/WebhookEndpoints.ts"
import * as WebhookLane from "../../infra/webhooks/WebhookLane.ts"
import { SourcesLive } from "../../infra/webhooks/index.ts"
import { DatabaseLive, FeaturesLive, ProjectionsLive } from "../../src/App.ts"
import { configLayer, type Env } from "../../test/support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../test/support/Database.ts"
import { appendTerminal } from "../../test/support/Executions.ts"
import { makeCertificate } from "../../test/support/WebhookReceiver.ts"
import { ActorRuntime } from "../cluster/ClusterRuntime.ts"
import { postgresCpu } from "../ProcessCpu.ts"
import { startReceiverThread } from "../WebhookReceiverThread.ts"
import { Execution, makeExecutionEntityLayer } from "./ExecutionEntity.ts"
import { Lane, type LaneClient, makeLaneEntityLayer, type Route, routedLanes } from "./LaneEntity.ts"

const numberEnv = (name: string, fallback: number) => {
  const raw = process.env[name]
  const value = raw === undefined || raw === "" ? fallback : Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`)
  return value
}
const CONCURRENCY = Math.max(1, Math.floor(numberEnv("PLACEMENT_CONCURRENCY", 128)))
const SECONDS = numberEnv("PLACEMENT_SECONDS", 5)
const WARMUP_SECONDS = numberEnv("PLACEMENT_WARMUP_SECONDS", 3)
const ROUNDS = Math.max(1, Math.floor(numberEnv("PLACEMENT_ROUNDS", 3)))
const SETTLE_SECONDS = numberEnv("PLACEMENT_SETTLE_SECONDS", 9)
const ENDPOINTS = Math.max(1, Math.floor(numberEnv("PLACEMENT_ENDPOINTS", 100)))
const STORES = (process.env.PLACEMENT_STORES ?? "memory,postgres").split(",").map((s) => s.trim())
const PARTS = (process.env.PLACEMENT_PARTS ?? "executions,webhooks").split(",").map((s) => s.trim())
/** Two callers per project, as bench/engine.ts: none waits for demo's per-project cap of 4. */
const PROJECTS = Math.max(1, Math.ceil(CONCURRENCY / 2))
/** Deliveries appended ahead of the receiver in the webhook runs (keeps every lane busy). */
const WEBHOOK_BACKLOG = Math.max(ENDPOINTS * 20, 2000)
/** Events appended at a time by the webhook feeder. */
const FEED_BATCH = 5
/** Deliveries per second offered in the paced webhook run (one event at a time). */
const PACED_RATE = Math.max(1, numberEnv("PLACEMENT_PACED_RATE", 1000))
const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")

// ---------------------------------------------------------------------------------------------
// Samples, rounds, tables

interface Sample {
  readonly ops: number
  readonly perSecond: number
  /** This process's CPU (user + system, all threads) per operation in the window, us. */
  readonly cpuUs: number
  /** CPU of every postgres process on the machine per operation in the window, us. */
  readonly pgCpuUs: number | undefined
  readonly p50: number | undefined
  readonly p99: number | undefined
  readonly failures: number
  /** Executions: CPU during the settle period per operation of the window, us. */
  readonly settleCpuUs?: number | undefined
  /** Entities still resident at the end of the settle period (should be 0). */
  readonly leftResident?: number | undefined
  /** Webhooks: dispatcher→lane hand-offs per delivery. */
  readonly handoffsPerOp?: number | undefined
}

interface Placement {
  readonly name: string
  readonly measure: (seconds: number) => Effect.Effect<Sample>
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = values.filter((v) => Number.isFinite(v)).toSorted((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? undefined : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]

const cpuSeconds = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1e6

const fixed = (value: number | undefined, digits = 0) =>
  value === undefined || !Number.isFinite(value) ? "-" : value.toFixed(digits)

const range = (values: ReadonlyArray<number>, digits = 0) => {
  const finite = values.filter((v) => Number.isFinite(v))
  if (finite.length === 0) return "-"
  return `${Math.min(...finite).toFixed(digits)}-${Math.max(...finite).toFixed(digits)}`
}

const renderTable = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]?.length ?? 0)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n")
}

const say = (text: string) => Effect.sync(() => void process.stdout.write(`${text}\n`))

/**
 * Warms every placement up, then runs the rounds: in each round every placement once, in order,
 * the first one being the direct placement the others are compared with.
 */
const runRounds = (title: string, unit: string, placements: ReadonlyArray<Placement>, warmUp = true) =>
  Effect.gen(function*() {
    if (warmUp && WARMUP_SECONDS > 0) {
      for (const placement of placements) {
        yield* say(`  warm-up: ${placement.name}`)
        yield* placement.measure(WARMUP_SECONDS)
      }
    }
    const samples: Array<Array<Sample>> = placements.map(() => [])
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, placement] of placements.entries()) {
        const sample = yield* placement.measure(SECONDS)
        samples[i]!.push(sample)
        yield* say(
          `  round ${round + 1} ${placement.name}: ${sample.perSecond.toFixed(0)} ${unit}/s, ` +
            `CPU ${sample.cpuUs.toFixed(0)} us/op` +
            (sample.pgCpuUs === undefined ? "" : `, Postgres ${sample.pgCpuUs.toFixed(0)} us/op`) +
            (sample.settleCpuUs === undefined ? "" : `, settle ${sample.settleCpuUs.toFixed(1)} us/op`) +
            (sample.handoffsPerOp === undefined ? "" : `, ${sample.handoffsPerOp.toFixed(3)} hand-offs/op`) +
            `, failures ${sample.failures}`
        )
      }
    }
    const heapMb = process.memoryUsage().heapUsed / 2 ** 20
    yield* say(`\n${formatResults(title, unit, placements, samples)}\n  (heap used at the end: ${heapMb.toFixed(0)} MB)\n`)
  })

const formatResults = (
  title: string,
  unit: string,
  placements: ReadonlyArray<Placement>,
  samples: ReadonlyArray<ReadonlyArray<Sample>>
) => {
  const hasPg = samples.some((runs) => runs.some((s) => s.pgCpuUs !== undefined))
  const hasSettle = samples.some((runs) => runs.some((s) => s.settleCpuUs !== undefined))
  const hasHandoffs = samples.some((runs) => runs.some((s) => s.handoffsPerOp !== undefined))
  const hasLatency = samples.some((runs) => runs.some((s) => s.p50 !== undefined))
  const header = [
    "placement",
    `${unit}/s median`,
    "range",
    "CPU us/op median",
    "range",
    ...(hasSettle ? ["settle CPU us/op"] : []),
    ...(hasPg ? ["Postgres CPU us/op"] : []),
    ...(hasLatency ? ["p50 ms", "p99 ms"] : []),
    ...(hasHandoffs ? ["hand-offs/op"] : []),
    "failures"
  ]
  const rows = placements.map((placement, i) => {
    const runs = samples[i]!
    return [
      placement.name,
      fixed(median(runs.map((s) => s.perSecond))),
      range(runs.map((s) => s.perSecond)),
      fixed(median(runs.map((s) => s.cpuUs))),
      range(runs.map((s) => s.cpuUs)),
      ...(hasSettle ? [fixed(median(runs.map((s) => s.settleCpuUs ?? NaN)), 1)] : []),
      ...(hasPg ? [fixed(median(runs.map((s) => s.pgCpuUs ?? NaN)))] : []),
      ...(hasLatency ? [fixed(median(runs.map((s) => s.p50 ?? NaN)), 2), fixed(median(runs.map((s) => s.p99 ?? NaN)), 2)] : []),
      ...(hasHandoffs ? [fixed(median(runs.map((s) => s.handoffsPerOp ?? NaN)), 3)] : []),
      String(runs.reduce((n, s) => n + s.failures, 0))
    ]
  })
  const base = samples[0]!
  const ratioLines = placements.slice(1).map((placement, j) => {
    const runs = samples[j + 1]!
    const rate = runs.map((s, round) => s.perSecond / base[round]!.perSecond)
    const cpu = runs.map((s, round) => s.cpuUs / base[round]!.cpuUs)
    const cpuDelta = runs.map((s, round) => s.cpuUs - base[round]!.cpuUs)
    return `  ${placement.name} / ${placements[0]!.name}: throughput per round ${rate.map((r) => r.toFixed(2)).join(", ")} ` +
      `(median ${median(rate).toFixed(2)}); CPU/op per round ${cpu.map((r) => r.toFixed(2)).join(", ")} ` +
      `(median ${median(cpu).toFixed(2)}, +${fixed(median(cpuDelta))} us/op)`
  })
  const leftovers = samples.flat().reduce((n, s) => n + (s.leftResident ?? 0), 0)
  return [
    `== ${title}: ${ROUNDS} rounds of ${SECONDS} s, alternating; medians and ranges over rounds ==`,
    renderTable(header, rows),
    "ratios (entity / direct, per round, same round's direct run):",
    ...ratioLines,
    ...(leftovers > 0 ? [`  note: ${leftovers} entities were still resident after some settle periods`] : [])
  ].join("\n")
}

// ---------------------------------------------------------------------------------------------
// Cluster runtimes

const NO_SERIALIZATION_RUNNER = RunnerAddress.RunnerAddress.make({ host: "localhost", port: 34432 })

/** `ActorRuntime.layerSingle`'s wiring with overrides (that layer takes none), for a second Sharding. */
const singleRunnerWith = (overrides: Partial<ShardingConfig.ShardingConfig["Service"]>) =>
  Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layer),
    Layer.provide([Layer.orDie(SqlRunnerStorage.layer), RunnerHealth.layerNoop, NodeCrypto.layerDigest]),
    Layer.provide(Layer.succeed(ShardingConfig.ShardingConfig, {
      ...ActorRuntime.shardingConfig(NO_SERIALIZATION_RUNNER),
      ...overrides
    }))
  )

/** The Sharding the service would run: memory, or the single runner on the service's own pool. */
const serviceCluster = Layer.unwrap(Database.useSync((storage) =>
  storage._tag === "Memory"
    ? ActorRuntime.layerMemory
    : ActorRuntime.layerSingle.pipe(Layer.provide(clientsOf(storage)))
))

/** The same without serialization simulation (Postgres: on its own database, see the header). */
const noSerializationCluster = (auxUrl: string | undefined) =>
  auxUrl === undefined
    ? ActorRuntime.layerMemoryWith({ simulateRemoteSerialization: false })
    : singleRunnerWith({ simulateRemoteSerialization: false }).pipe(
      Layer.provide(PgClient.layer({ url: Redacted.make(auxUrl), maxConnections: 4, applicationName: "placement-aux" }))
    )

const residentCount = (context: Context.Context<Sharding.Sharding>) => Context.get(context, Sharding.Sharding).activeEntityCount

// ---------------------------------------------------------------------------------------------
// Executions

interface ExecuteOutcome {
  readonly record: { readonly status: string }
}

/** One service instance with both Shardings and their `Execution` entities. */
interface ExecutionsWorld {
  readonly executions: Executions["Service"]
  readonly clusterA: Context.Context<Sharding.Sharding>
  readonly clusterB: Context.Context<Sharding.Sharding>
  readonly clientA: Effect.Success<typeof Execution.client>
  readonly clientB: Effect.Success<typeof Execution.client>
}

const buildExecutionsWorld = (env: Env, auxUrl: string | undefined) =>
  Effect.gen(function*() {
    const features = yield* Layer.build(FeaturesLive.pipe(Layer.provide(configLayer(env))))
    const fromFeatures = Layer.provide(Layer.succeedContext(features))
    const clusterA = yield* Layer.build(makeExecutionEntityLayer().pipe(Layer.provideMerge(serviceCluster), fromFeatures))
    const clusterB = yield* Layer.build(
      makeExecutionEntityLayer().pipe(Layer.provideMerge(noSerializationCluster(auxUrl)), fromFeatures)
    )
    return {
      executions: Context.get(features, Executions),
      clusterA,
      clusterB,
      clientA: yield* Effect.provideContext(Execution.client, clusterA),
      clientB: yield* Effect.provideContext(Execution.client, clusterB)
    } satisfies ExecutionsWorld
  }).pipe(Effect.orDie)

/**
 * Memory: a fresh service instance for every measurement (its store lives in this heap and
 * would otherwise grow by gigabytes over the rounds, the later rounds paying for the earlier
 * ones' garbage collection), warmed for FRESH_WARMUP_SECONDS. Postgres: one instance for all.
 */
const FRESH_WARMUP_SECONDS = 1

const executionsPart = (store: string, env: Env, auxUrl: string | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const fresh = auxUrl === undefined
    const shared = fresh ? undefined : yield* buildExecutionsWorld(env, auxUrl)
    const durable = auxUrl !== undefined
    const runId = Date.now().toString(36)
    let sequence = 0

    const command = (caller: number) => ({
      projectId: `proj_bench_${caller % PROJECTS}`,
      userId: "bench_user",
      tool: "demo.echo",
      input: { message: "hello", n: 1 }
    })

    /** `concurrency` callers running `op` in a loop until `until`; the latencies when recording. */
    const drive = (op: (caller: number) => Effect.Effect<ExecuteOutcome, unknown>, until: number, latencies?: Array<number>) =>
      Effect.gen(function*() {
        let failures = 0
        const loop = (caller: number) =>
          Effect.gen(function*() {
            while (Date.now() < until) {
              // Like a request between two reads of its socket: the others get their turn.
              yield* Effect.yieldNow
              const started = performance.now()
              const result = yield* Effect.result(op(caller))
              latencies?.push(performance.now() - started)
              if (result._tag === "Failure" || result.success.record.status !== "succeeded") failures++
            }
          })
        yield* Effect.forEach(Array.from({ length: CONCURRENCY }, (_, c) => c), loop, { concurrency: "unbounded", discard: true })
        return failures
      })

    const measure = (
      opOf: (world: ExecutionsWorld) => (caller: number) => Effect.Effect<ExecuteOutcome, unknown>,
      shardingOf: (world: ExecutionsWorld) => Context.Context<Sharding.Sharding> | undefined
    ) =>
    (seconds: number): Effect.Effect<Sample> =>
      Effect.scoped(Effect.gen(function*() {
        const world = shared ?? (yield* buildExecutionsWorld(env, auxUrl))
        const op = opOf(world)
        const sharding = shardingOf(world)
        if (fresh) yield* drive(op, Date.now() + FRESH_WARMUP_SECONDS * 1000)
        const latencies: Array<number> = []
        const cpu0 = process.cpuUsage()
        const pg0 = durable ? postgresCpu() : 0
        const start = performance.now()
        const failures = yield* drive(op, Date.now() + seconds * 1000, latencies)
        const elapsed = (performance.now() - start) / 1000
        const cpu = cpuSeconds(process.cpuUsage(cpu0))
        const pg = durable ? postgresCpu() - pg0 : undefined
        const ops = latencies.length
        // The settle period: the same for every placement, long enough for the cluster's reaper
        // (every 5 s, entities idle for 1 s) to stop this window's entities.
        const settle0 = process.cpuUsage()
        if (seconds === SECONDS) yield* Effect.sleep(`${SETTLE_SECONDS} seconds`)
        const settleCpu = cpuSeconds(process.cpuUsage(settle0))
        const leftResident = sharding === undefined ? 0 : yield* residentCount(sharding)
        // Start the next measurement clean even if the reaper was late (not counted above).
        if (sharding !== undefined) {
          for (let wait = 0; wait < 100 && (yield* residentCount(sharding)) > 0; wait++) yield* Effect.sleep("100 millis")
        }
        latencies.sort((a, b) => a - b)
        return {
          ops,
          perSecond: ops / elapsed,
          cpuUs: (1e6 * cpu) / Math.max(1, ops),
          pgCpuUs: pg === undefined ? undefined : (1e6 * pg) / Math.max(1, ops),
          p50: percentile(latencies, 0.5),
          p99: percentile(latencies, 0.99),
          failures,
          settleCpuUs: seconds === SECONDS ? (1e6 * settleCpu) / Math.max(1, ops) : undefined,
          leftResident
        }
      }))

    const placements: ReadonlyArray<Placement> = [
      {
        name: "direct",
        measure: measure((w) => (caller) =>
          w.executions.execute({
            ...command(caller),
            mode: undefined,
            connectionId: undefined,
            attachments: undefined,
            idempotencyKey: undefined
          }), () => undefined)
      },
      {
        name: "entity",
        measure: measure((w) => (c) => w.clientA(`exe-${runId}-${sequence++}`).Execute(command(c)), (w) => w.clusterA)
      },
      {
        name: "entity, resident",
        measure: measure((w) => (c) => w.clientA(`caller-${c}`).Execute(command(c)), (w) => w.clusterA)
      },
      {
        name: "entity, no serialization",
        measure: measure((w) => (c) => w.clientB(`exe-${runId}-${sequence++}`).Execute(command(c)), (w) => w.clusterB)
      }
    ]
    yield* say(
      `executions, ${store}: ${CONCURRENCY} fibers, sync demo.echo, ${PROJECTS} projects` +
        (fresh ? `; a fresh in-memory service per measurement, warmed ${FRESH_WARMUP_SECONDS} s` : "")
    )
    yield* runRounds(`executions, ${store} (sync demo.echo, ${CONCURRENCY} fibers, engine level)`, "exec", placements)
  }))

// ---------------------------------------------------------------------------------------------
// Webhooks

/** The webhooks feature as infra/webhooks/index.ts composes it, with the dispatcher's lanes given apart. */
const EndpointReadsLive = onStorage(WebhookEndpointReads.layerMemory, WebhookEndpointReads.layerPg)
const CheckpointsLive = onStorage(WebhookDispatcher.checkpointsMemory, WebhookDispatcher.checkpointsPg)

const webhookCore = WebhookLane.layer.pipe(
  Layer.provide(EndpointReadsLive),
  Layer.provideMerge(WebhookEndpointsModule.layer),
  Layer.provideMerge(Layer.mergeAll(SourcesLive, OutboundHttp.layer)),
  Layer.provideMerge(Layer.mergeAll(Eventlog.layer, Actors.layer, Access.layer)),
  Layer.provideMerge(ProjectionsLive),
  Layer.provideMerge(DatabaseLive)
)

const webhooksPart = (store: string, env: Env, auxUrl: string | undefined) =>
  Effect.scoped(Effect.gen(function*() {
    const certificate = makeCertificate()
    const original = getCACertificates("default")
    setDefaultCACertificates([...original, certificate.cert])
    yield* Effect.addFinalizer(() => Effect.sync(() => setDefaultCACertificates(original)))
    const receiver = yield* Effect.acquireRelease(
      Effect.promise(() => startReceiverThread(certificate)),
      (r) => Effect.promise(() => r.close())
    )
    const config = configLayer({ ...env, SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" })
    const core = yield* Layer.build(webhookCore.pipe(Layer.provide(config)))
    const fromCore = Layer.provide(Layer.succeedContext(core))
    const clusterA = yield* Layer.build(makeLaneEntityLayer().pipe(Layer.provideMerge(serviceCluster), fromCore))
    const clusterB = yield* Layer.build(makeLaneEntityLayer().pipe(Layer.provideMerge(noSerializationCluster(auxUrl)), fromCore))
    const clientA: LaneClient = yield* Effect.provideContext(Lane.client, clusterA)
    const clientB: LaneClient = yield* Effect.provideContext(Lane.client, clusterB)
    const route: Route = { current: undefined, handoffs: 0, failures: 0 }
    const lanes = routedLanes(Context.get(core, WebhookLane.WebhookLanes), route)
    // The dispatcher (and its sweep and watcher) of this service instance, given the routed lanes.
    yield* Layer.build(WebhookDispatcher.layer.pipe(
      Layer.provide(Layer.succeed(WebhookLane.WebhookLanes, lanes)),
      Layer.provide(CheckpointsLive),
      fromCore,
      Layer.provide(config)
    ))

    const projectId = "proj_placement"
    const endpoints = Context.get(core, WebhookEndpoints)
    for (let i = 0; i < ENDPOINTS; i++) {
      yield* Effect.orDie(endpoints.create(projectId, { url: receiver.url(`/e${i}`), events: ["execution.completed"], active: true }))
    }
    const eventStore = Context.get(core, Eventlog.EventStore)
    const appendOne = Effect.orDie(appendTerminal(projectId, "succeeded").pipe(Effect.provideService(Eventlog.EventStore, eventStore)))
    const durable = auxUrl !== undefined
    const threadCpu = () => {
      const usage = process.threadCpuUsage()
      return (usage.user + usage.system) / 1e6
    }

    /** Append time of each event, by event id (the receiver reports the event id of each arrival). */
    const appendedAt = new Map<string, number>()
    const appendTimed = Effect.suspend(() => {
      const at = Date.now()
      return Effect.map(appendOne, (event) => void appendedAt.set(event.eventId, at))
    })

    /**
     * burst: keeps WEBHOOK_BACKLOG deliveries appended ahead of the receiver for `seconds`;
     * paced: one event every ENDPOINTS / PACED_RATE seconds. Counts the deliveries received in the
     * window, then drains (through the same placement) before the next measurement.
     */
    const measure = (client: LaneClient | undefined, mode: "burst" | "paced") => (seconds: number): Effect.Effect<Sample> =>
      Effect.gen(function*() {
        route.current = client
        yield* Effect.promise(() => receiver.reset())
        appendedAt.clear()
        route.handoffs = 0
        route.failures = 0
        let appended = 0
        const gapMs = (1000 * ENDPOINTS) / PACED_RATE
        const until = Date.now() + seconds * 1000
        const cpu0 = threadCpu()
        const pg0 = durable ? postgresCpu() : 0
        const start = performance.now()
        while (Date.now() < until) {
          if (mode === "paced") {
            const due = start + appended * gapMs
            const wait = due - performance.now()
            if (wait > 0) yield* Effect.sleep(`${wait} millis`)
            yield* Effect.forkChild(appendTimed)
            appended += 1
          } else if (appended * ENDPOINTS - receiver.received() < WEBHOOK_BACKLOG) {
            yield* Effect.forEach(Array.from({ length: FEED_BATCH }), () => appendOne, { concurrency: FEED_BATCH, discard: true })
            appended += FEED_BATCH
          } else {
            yield* Effect.sleep("2 millis")
          }
        }
        const delivered = receiver.received()
        const elapsed = (performance.now() - start) / 1000
        const cpu = threadCpu() - cpu0
        const pg = durable ? postgresCpu() - pg0 : undefined
        const handoffs = route.handoffs
        const expected = appended * ENDPOINTS
        const deadline = Date.now() + 120_000
        while (receiver.received() < expected && Date.now() < deadline) yield* Effect.sleep("20 millis")
        let latencies: Array<number> = []
        if (mode === "paced") {
          const arrivals = yield* Effect.promise(() => receiver.arrivals())
          latencies = arrivals.flatMap((a) => {
            const sent = appendedAt.get(a.eventId)
            return sent === undefined ? [] : [a.at - sent]
          }).toSorted((a, b) => a - b)
        }
        return {
          ops: delivered,
          perSecond: delivered / elapsed,
          cpuUs: (1e6 * cpu) / Math.max(1, delivered),
          pgCpuUs: pg === undefined ? undefined : (1e6 * pg) / Math.max(1, delivered),
          p50: percentile(latencies, 0.5),
          p99: percentile(latencies, 0.99),
          failures: expected - receiver.received() + route.failures,
          handoffsPerOp: handoffs / Math.max(1, delivered)
        }
      })

    const placementsFor = (mode: "burst" | "paced"): ReadonlyArray<Placement> => [
      { name: "direct", measure: measure(undefined, mode) },
      { name: "entity", measure: measure(clientA, mode) },
      { name: "entity, no serialization", measure: measure(clientB, mode) }
    ]
    yield* say(`webhooks, ${store}: ${ENDPOINTS} endpoints, HTTPS receiver in a worker thread`)
    yield* runRounds(
      `webhooks burst, ${store} (deliveries/s at saturation across ${ENDPOINTS} endpoints; CPU = the service's thread, ` +
        `not the receiver's; it includes appending the source events)`,
      "deliveries",
      placementsFor("burst")
    )
    yield* runRounds(
      `webhooks paced, ${store} (${PACED_RATE} deliveries/s offered, one event at a time, across ${ENDPOINTS} endpoints; ` +
        `latency from the event's append to the receiver)`,
      "deliveries",
      placementsFor("paced"),
      false
    )
    route.current = undefined
  }))

// ---------------------------------------------------------------------------------------------

const withDatabases = async (use: (url: string, auxUrl: string) => Promise<void>) => {
  const url = await createTestDatabase("placement")
  const auxUrl = await createTestDatabase("placement_aux")
  try {
    await use(url, auxUrl)
  } finally {
    await dropTestDatabase(url)
    await dropTestDatabase(auxUrl)
  }
}

const run = (effect: Effect.Effect<void, unknown>) => Effect.runPromise(effect)

process.stdout.write(
  `placement benchmark: ${CONCURRENCY} fibers, ${SECONDS} s per measurement, ${ROUNDS} rounds, warm-up ${WARMUP_SECONDS} s per placement, ` +
    `settle ${SETTLE_SECONDS} s, node ${process.version}\n`
)
for (const store of STORES) {
  if (store === "memory") {
    if (PARTS.includes("executions")) await run(executionsPart("memory", {}, undefined))
    if (PARTS.includes("webhooks")) await run(webhooksPart("memory", {}, undefined))
  } else if (store === "postgres") {
    if (!postgresAvailable) {
      process.stdout.write("Postgres is not reachable: the Postgres measurements are skipped\n")
      continue
    }
    if (PARTS.includes("executions")) {
      await withDatabases((url, auxUrl) =>
        run(executionsPart("postgres", { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }, auxUrl)))
    }
    if (PARTS.includes("webhooks")) {
      await withDatabases((url, auxUrl) =>
        run(webhooksPart("postgres", { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }, auxUrl)))
    }
  }
}
process.exit(0)
