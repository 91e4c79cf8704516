/**
 * The execution engine without HTTP: the Executions service (validation, idempotency, caps, the
 * Execution actor, the event log and its inline projections, the webhook dispatcher following the
 * log) driven in this process by `concurrency` fibers that each execute sync `demo.echo` in a loop.
 * It shows what the engine sustains on a store, apart from the HTTP server's cost per request.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { Executions } from "../infra/executions/Executions.ts"
import { FeaturesLive } from "../src/App.ts"
import { configLayer, type Env } from "../test/support/Config.ts"

export interface EngineResult {
  readonly executions: number
  readonly perSecond: number
  /** CPU (user + system) of this process per execution, microseconds. */
  readonly cpuUs: number
  /** CPU of `externalCpu` (seconds, e.g. the local Postgres) per execution, microseconds. */
  readonly externalCpuUs: number | undefined
  readonly p50: number
  readonly p99: number
  readonly failures: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

export const runEngine = async (
  env: Env,
  options: {
    readonly seconds: number
    readonly warmupSeconds: number
    readonly concurrency: number
    readonly projects: number
    /** CPU seconds used so far by something else the engine drives (the database). */
    readonly externalCpu?: (() => number) | undefined
  }
): Promise<EngineResult> => {
  const layer = FeaturesLive.pipe(Layer.provide(configLayer(env)))
  const runtime = ManagedRuntime.make(layer)
  try {
    const executions = await runtime.runPromise(Executions)
    const latencies: Array<number> = []
    let failures = 0
    const loop = (client: number, until: number, record: boolean) =>
      Effect.gen(function*() {
        while (Date.now() < until) {
          // Like a request between two reads of its socket: the others get their turn.
          yield* Effect.yieldNow
          const started = performance.now()
          const result = yield* Effect.result(executions.execute({
            projectId: `proj_bench_${client % options.projects}`,
            userId: "bench_user",
            tool: "demo.echo",
            input: { message: "hello", n: 1 },
            mode: undefined,
            connectionId: undefined,
            attachments: undefined,
            idempotencyKey: undefined
          }))
          if (!record) continue
          latencies.push(performance.now() - started)
          if (result._tag === "Failure" || result.success.record.status !== "succeeded") failures++
        }
      })
    const all = (until: number, record: boolean) =>
      runtime.runPromise(Effect.forEach(Array.from({ length: options.concurrency }, (_, c) => c), (c) => loop(c, until, record), {
        concurrency: "unbounded",
        discard: true
      }))
    await all(Date.now() + options.warmupSeconds * 1000, false)
    const cpu = process.cpuUsage()
    const sampleExternal = options.externalCpu
    const externalStart = sampleExternal?.() ?? 0
    const start = performance.now()
    await all(Date.now() + options.seconds * 1000, true)
    const elapsed = (performance.now() - start) / 1000
    const used = process.cpuUsage(cpu)
    const externalUsed = sampleExternal === undefined ? undefined : sampleExternal() - externalStart
    latencies.sort((a, b) => a - b)
    return {
      executions: latencies.length,
      perSecond: latencies.length / elapsed,
      cpuUs: (used.user + used.system) / Math.max(1, latencies.length),
      externalCpuUs: externalUsed === undefined ? undefined : (1e6 * externalUsed) / Math.max(1, latencies.length),
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      failures
    }
  } finally {
    await runtime.dispose()
  }
}
