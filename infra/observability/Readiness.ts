/**
 * What `/readyz` answers (decisions.md section 9): whether this process should be sent traffic.
 * It is ready when its store answers, every migration this code knows is applied (and none it
 * does not), the followers of the log are not far behind, it holds a runner lease (without one,
 * after an outage longer than the lease, it refuses executions until it has registered again),
 * and it is not stopping. Each check
 * says what it saw, so an operator reading the answer knows which one failed and why.
 *
 * Every check is bounded in time: a store that does not answer is "unreachable" after
 * CHECK_TIMEOUT_MS, not a probe that hangs until the orchestrator's own timeout.
 */
import { Cause, Context, Effect, Layer } from "effect"
import { Runner } from "../actors/Runner.ts"
import { Shutdown } from "../actors/Shutdown.ts"
import { Database } from "../eventlog/Database.ts"
import { integer } from "../Settings.ts"
import { Gauges } from "./Gauges.ts"

export interface Check {
  readonly status: "ok" | "failing"
  readonly [detail: string]: unknown
}

export interface ReadinessReport {
  readonly status: "ok" | "unavailable"
  readonly checks: Readonly<Record<string, Check>>
}

export interface ReadinessShape {
  readonly check: Effect.Effect<ReadinessReport>
}

export class Readiness extends Context.Service<Readiness, ReadinessShape>()("app/infra/observability/Readiness") {}

const CHECK_TIMEOUT_MS = 2_000

/**
 * SERVICE_READY_MAX_LAG: committed events the followers of the log may be behind while the
 * process still counts as ready (the dispatcher saves its checkpoint once a second, so some lag
 * is normal under load).
 */
export const readySettings = Effect.map(integer("SERVICE_READY_MAX_LAG", 100_000, 0), (maxLag) => ({ maxLag }))

/** Why a check failed, in one line without credentials. */
const reason = (error: unknown): string => {
  const text = error instanceof Error ? error.message : typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)
  return text.split("\n", 1)[0]?.slice(0, 200) ?? "unknown"
}

const bounded = <A>(effect: Effect.Effect<A, unknown>): Effect.Effect<{ readonly ok: A } | { readonly error: string }> =>
  effect.pipe(
    Effect.map((ok) => ({ ok })),
    Effect.timeoutOption(CHECK_TIMEOUT_MS),
    Effect.map((result) => (result._tag === "Some" ? result.value : { error: `no answer within ${CHECK_TIMEOUT_MS} ms` })),
    Effect.catchCause((cause) => Effect.succeed({ error: reason(Cause.squash(cause)) }))
  )

export const make = Effect.gen(function*() {
  const storage = yield* Database
  const gauges = yield* Gauges
  const shutdown = yield* Shutdown
  const runner = yield* Runner
  const { maxLag } = yield* Effect.orDie(readySettings)

  const store: Effect.Effect<Check> = storage._tag === "Memory"
    ? Effect.succeed({ status: "ok", mode: "memory" })
    : Effect.map(bounded(storage.sql`SELECT 1`), (result) =>
      "ok" in result ? { status: "ok", mode: "postgres" } : { status: "failing", mode: "postgres", error: result.error })

  const migrations: Effect.Effect<Check> = storage._tag === "Memory"
    ? Effect.succeed({ status: "ok", mode: "memory" })
    : Effect.map(bounded(storage.sql<{ id: number }>`SELECT id FROM schema_migrations`), (result) => {
      if ("error" in result) return { status: "failing", error: result.error }
      const applied = new Set(result.ok.map((row) => Number(row.id)))
      const known = new Set(storage.migrationIds)
      const missing = [...known].filter((id) => !applied.has(id))
      const unknown = [...applied].filter((id) => !known.has(id))
      return missing.length === 0 && unknown.length === 0
        ? { status: "ok", applied: applied.size }
        : { status: "failing", applied: applied.size, missing, unknown }
    })

  const projections: Effect.Effect<Check> = Effect.map(bounded(gauges.lag), (result) => {
    if ("error" in result) return { status: "failing", error: result.error }
    return { status: result.ok.events <= maxLag ? "ok" : "failing", lagEvents: result.ok.events, maxLagEvents: maxLag }
  })

  /** Whether this process may run executions now: it holds a runner lease (Runner.ts). Memory mode always does. */
  const lease: Effect.Effect<Check> = runner.registered.pipe(
    Effect.as<Check>({ status: "ok" }),
    Effect.catch(() => Effect.succeed<Check>({ status: "failing", error: "no runner lease: registering again (the database was away, or this process paused, longer than the lease)" }))
  )

  const check = Effect.gen(function*() {
    const [storeCheck, migrationsCheck, projectionsCheck, runnerCheck] = yield* Effect.all([store, migrations, projections, lease], { concurrency: "unbounded" })
    const lifecycle: Check = shutdown.stopping() ? { status: "failing", state: "stopping" } : { status: "ok", state: "serving" }
    const checks = { store: storeCheck, migrations: migrationsCheck, projections: projectionsCheck, runner: runnerCheck, lifecycle }
    const ready = Object.values(checks).every((c) => c.status === "ok")
    return { status: ready ? "ok" : "unavailable", checks } satisfies ReadinessReport
  })

  return Readiness.of({ check })
})

export const layer: Layer.Layer<Readiness, never, Database | Gauges | Runner | Shutdown> = Layer.effect(Readiness, make)
