/**
 * The gauges of decisions.md section 9 that are states rather than events: webhook lane depth
 * (open deliveries) and the age of the oldest, projection lag (committed events a follower of
 * the log has not taken yet: the webhook dispatcher, and any asynchronous projection), the
 * event log's append rate, and the database connections in use. They are read from the store
 * when `/metrics` is scraped (and every 10 s while metrics are exported over OTLP), never on a
 * request's path.
 *
 * A store that is down or does not answer must not take the scrape with it: a scrape waits
 * STORE_WAIT_MS at most for the store's gauges, then is answered with what the process keeps
 * itself (its counters, histograms and own gauges), the store's gauges as last read, and
 * `store_up` 0. The read it gave up on goes on by itself (one at a time), so however often a
 * silent store is scraped, the gauges hold at most one connection of the pool.
 *
 * Memory mode has no lag to speak of (every projection is applied in the append's own step, and
 * the dispatcher follows in this process), and no pool.
 */
import { Clock, Context, Effect, Exit, Fiber, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { Database, POOL_SIZE, type Storage } from "../eventlog/Database.ts"
import { projectionStatus } from "../eventlog/ProjectionAdmin.ts"
import { Projections } from "../eventlog/Projection.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { MemoryLog, MemoryTablesService } from "../eventlog/MemoryEventStore.ts"
import { DELIVERIES_TABLE } from "../webhooks/WebhookProjections.ts"
import { appendedSoFar, setGauge } from "./Metrics.ts"
import { oldestOpenTransaction } from "./FeedWatch.ts"
import { exportEnabled } from "./Telemetry.ts"

/** The collector, when the process exposes it (`--expose-gc`); never in a normal start. */
const collectGarbage = (globalThis as { readonly gc?: () => void }).gc

/** How often the gauges are read while metrics are exported over OTLP. */
const OTLP_REFRESH_MS = 10_000

/** How long a refresh waits for the gauges read from the store (readiness waits 2 s for its checks). */
export const STORE_WAIT_MS = 1_500

export interface LagReport {
  /** Events committed that the slowest follower has not taken. */
  readonly events: number
  /** Per follower. */
  readonly byFollower: Readonly<Record<string, number>>
}

export interface GaugesShape {
  /**
   * Sets the process's own gauges, and those read from the store if it answers within
   * STORE_WAIT_MS (`store_up` says whether it did); never fails.
   */
  readonly refresh: Effect.Effect<void>
  /** Projection lag now; readiness reads it too. */
  readonly lag: Effect.Effect<LagReport, unknown>
}

export class Gauges extends Context.Service<Gauges, GaugesShape>()("app/infra/observability/Gauges") {}

/** Counting stops here: a lag this large is reported as it, not counted to the end. */
const LAG_COUNT_CAP = 1_000_000

type Postgres = Extract<Storage, { _tag: "Postgres" }>

const dispatcherLag = (storage: Postgres) =>
  Effect.map(
    storage.sql<{ n: bigint | number }>`
      SELECT count(*) AS n FROM (
        SELECT 1 FROM events e, webhook_dispatch_checkpoint c
        WHERE c.name = 'dispatcher' AND (e.tx_id, e.global_position) > (c.checkpoint_tx, c.checkpoint_seq)
          AND e.tx_id < pg_snapshot_xmin(pg_current_snapshot())
        LIMIT ${LAG_COUNT_CAP}) AS behind`,
    (rows) => Number(rows[0]?.n ?? 0)
  )

const pgLag = (storage: Postgres, projections: Projections["Service"]) =>
  Effect.gen(function*() {
    const statuses = yield* projectionStatus.pipe(
      Effect.provideService(Projections, projections),
      Effect.provideService(SqlClient.SqlClient, storage.sql)
    )
    const byFollower: Record<string, number> = {}
    for (const status of statuses) byFollower[status.name] = status.lag
    byFollower.webhook_dispatcher = yield* dispatcherLag(storage)
    return { events: Math.max(0, ...Object.values(byFollower)), byFollower }
  })

const openDeliveries = (storage: Storage, views: ViewStore["Service"]) =>
  storage._tag === "Postgres"
    ? Effect.map(
      storage.sql<{ n: bigint | number; oldest: string | null }>`
        SELECT count(*) AS n, min(queued_at) AS oldest FROM v_webhook_deliveries WHERE open`,
      (rows) => ({ depth: Number(rows[0]?.n ?? 0), oldest: rows[0]?.oldest ?? undefined })
    )
    : Effect.map(
      views.list(DELIVERIES_TABLE, {
        where: [{ column: "open", op: "=", value: true }],
        orderBy: [{ column: "queued_at", direction: "asc" }],
        limit: Number.MAX_SAFE_INTEGER
      }),
      (rows) => ({ depth: rows.length, oldest: typeof rows[0]?.queued_at === "string" ? rows[0].queued_at : undefined })
    )

const connections = (storage: Postgres) =>
  storage.sql<{ state: string | null; n: bigint | number }>`
    SELECT coalesce(state, 'unknown') AS state, count(*) AS n FROM pg_stat_activity
    WHERE datname = current_database() AND application_name = 'service'
    GROUP BY 1`

/** A rate over the time since the previous scrape. */
const appendRate = (perSecond: number) =>
  setGauge("eventlog_appends_per_second", "Events appended by this process per second, since the previous scrape", perSecond)

export const make = Effect.gen(function*() {
  const storage = yield* Database
  const views = yield* ViewStore
  const projections = yield* Projections
  // Memory mode: what retention keeps (MemoryRetention.ts), for the memory benchmark.
  const memoryLog = yield* Effect.serviceOption(MemoryLog)
  const memoryTables = yield* Effect.serviceOption(MemoryTablesService)
  let last = { at: yield* Clock.currentTimeMillis, appended: appendedSoFar() }
  // 0 until the first interval has passed, so that a scrape right after the start lists it too.
  appendRate(0)

  const lag: Effect.Effect<LagReport, unknown> = storage._tag === "Postgres"
    ? pgLag(storage, projections)
    : Effect.succeed({ events: 0, byFollower: {} })

  /** The gauges read from the store, each set as soon as it is read. */
  const readStore = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const open = yield* openDeliveries(storage, views)
    setGauge("webhook_lane_depth", "Webhook deliveries queued or waiting for a retry", open.depth)
    setGauge(
      "webhook_lane_oldest_pending_seconds",
      "Age of the oldest open webhook delivery (0 when none is open)",
      open.oldest === undefined ? 0 : Math.max(0, (now - Date.parse(open.oldest)) / 1000)
    )
    const report = yield* lag
    setGauge("projection_lag_events", "Committed events the slowest follower of the log has not taken", report.events)
    for (const [follower, events] of Object.entries(report.byFollower)) {
      setGauge("projection_lag_events_by_follower", "Committed events each follower of the log has not taken", events, { follower })
    }
    if (storage._tag === "Postgres") {
      const holder = yield* oldestOpenTransaction(storage.sql)
      setGauge(
        "eventlog_feed_held_seconds",
        "How long the oldest open transaction on the server has held the log's feed back (followers take only what committed before it; FeedWatch.ts)",
        holder?.seconds ?? 0
      )
      const rows = yield* connections(storage)
      for (const state of ["active", "idle", "idle in transaction"]) {
        const row = rows.find((r) => r.state === state)
        setGauge("db_connections", "Connections of every service process to this database, by state (pool use)", Number(row?.n ?? 0), { state })
      }
    }
  })

  /** The gauges this process knows without the store. */
  const readProcess = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    // The rate over the time since the last refresh (the scrape interval).
    const appended = appendedSoFar()
    const seconds = (now - last.at) / 1000
    if (seconds >= 1) {
      appendRate((appended - last.appended) / seconds)
      last = { at: now, appended }
    }
    // Started with --expose-gc (the memory benchmark, bench/memory.ts), a scrape collects
    // garbage first, so that the gauge is the live heap rather than wherever the collector was.
    collectGarbage?.()
    setGauge("nodejs_heap_used_bytes", "V8 heap in use by this process", process.memoryUsage().heapUsed)
    if (memoryLog._tag === "Some") {
      const sizes = memoryLog.value.sizes()
      setGauge("memory_retained_events", "Memory mode: events kept in the log", sizes.events)
      setGauge("memory_retained_streams", "Memory mode: streams kept", sizes.streams)
    }
    if (memoryTables._tag === "Some") {
      for (const [table, size] of memoryTables.value.sizes()) setGauge("memory_retained_rows", "Memory mode: view rows kept, by table", size, { table })
    }
    if (storage._tag === "Postgres") setGauge("db_pool_max_connections", "Pool size of this process", POOL_SIZE)
  })

  // The read of the store in progress, if any. It runs detached from the scrape that started it
  // (in the layer's scope): a scrape stops waiting for it after STORE_WAIT_MS, and does not wait
  // for a statement to a silent server to be cancelled either. A scrape while it still runs waits
  // for it rather than starting another.
  const scope = yield* Effect.scope
  let reading: Fiber.Fiber<void, unknown> | undefined

  const refresh = Effect.gen(function*() {
    yield* readProcess
    if (reading === undefined || reading.pollUnsafe() !== undefined) reading = yield* Effect.forkIn(readStore, scope)
    const read = yield* Fiber.await(reading).pipe(Effect.timeoutOption(STORE_WAIT_MS))
    const answered = read._tag === "Some" && Exit.isSuccess(read.value)
    setGauge("store_up", "1 when the store answered this scrape's reads of its gauges, 0 when not (they keep their last values then)", answered ? 1 : 0)
    if (read._tag === "None") yield* Effect.logWarning(`metrics: the store did not answer within ${STORE_WAIT_MS} ms; its gauges keep their last values`)
    else if (Exit.isFailure(read.value)) yield* Effect.logWarning("metrics: reading the gauges failed; they keep their last values", read.value.cause)
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("metrics: reading the gauges failed", cause)))

  // Exported over OTLP, the gauges are read on a schedule instead of by scrapes.
  if (yield* Effect.orElseSucceed(exportEnabled, () => false)) {
    yield* Effect.forkScoped(Effect.repeat(refresh, Schedule.spaced(OTLP_REFRESH_MS)))
  }

  return Gauges.of({ refresh, lag })
})

export const layer: Layer.Layer<Gauges, never, Database | ViewStore | Projections> = Layer.effect(Gauges, make)
