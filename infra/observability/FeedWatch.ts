/**
 * Says when the log's feed is held back, on Postgres.
 *
 * Why: followers of the log (the webhook dispatcher, asynchronous projections, `events tail`)
 * read events in commit order, so they take only what committed before the oldest transaction
 * still open anywhere on the server (`pg_snapshot_xmin`, eventlog/PgEventRows.ts): an event committed
 * after it could otherwise be passed over for good. A transaction left open (a console session
 * idle in a transaction, a long batch job, a replay) therefore holds every webhook back until it
 * ends, with nothing failing and nothing in the service's own state to show why.
 *
 * So every check (at most every 10 s) reads the oldest open transaction that holds an xid; once
 * it has been open SERVICE_FEED_HELD_WARN_SECONDS (30 s by default) the process logs it at warn,
 * once per holder, naming its backend pid, application, database and state (what an operator
 * needs to find it, `pg_terminate_backend(pid)` being the last resort), and at info when the feed
 * moves again. `/metrics` carries the same age as `eventlog_feed_held_seconds` (Gauges.ts).
 *
 * A role without `pg_read_all_stats` sees other roles' sessions in `pg_stat_activity` without
 * their details: such a holder is logged with what is visible.
 */
import { Effect, Layer, Schedule } from "effect"
import type { SqlClient } from "effect/sql"
import { Database } from "../eventlog/Database.ts"
import { integer } from "../Settings.ts"

export interface Holder {
  readonly pid: number
  readonly application: string
  readonly database: string
  readonly state: string
  /** Seconds since its transaction began. */
  readonly seconds: number
}

/** The oldest transaction with an xid open on the server, if any. */
export const oldestOpenTransaction = (sql: SqlClient.SqlClient): Effect.Effect<Holder | undefined, unknown> =>
  Effect.map(
    sql<{ pid: number; application: string; database: string; state: string; seconds: number }>`
      SELECT pid,
        coalesce(nullif(application_name, ''), '-') AS application,
        coalesce(datname, '-') AS database,
        coalesce(state, 'unknown') AS state,
        extract(epoch FROM clock_timestamp() - xact_start)::float8 AS seconds
      FROM pg_stat_activity
      WHERE backend_xid IS NOT NULL AND xact_start IS NOT NULL
      ORDER BY xact_start
      LIMIT 1`,
    (rows) => {
      const row = rows[0]
      return row === undefined ? undefined : { ...row, pid: Number(row.pid), seconds: Number(row.seconds) }
    }
  )

/** SERVICE_FEED_HELD_WARN_SECONDS: how long a transaction may hold the feed before it is logged. */
export const heldWarnSetting = integer("SERVICE_FEED_HELD_WARN_SECONDS", 30, 1, 86_400)

export const layer = Layer.effectDiscard(Effect.gen(function*() {
  const storage = yield* Database
  if (storage._tag !== "Postgres") return
  const warnAfter = yield* heldWarnSetting
  // The holder last logged, and since when the feed has been held by one past the threshold.
  let warned: { readonly pid: number; readonly since: number } | undefined
  const check = Effect.gen(function*() {
    const holder = yield* oldestOpenTransaction(storage.sql)
    if (holder !== undefined && holder.seconds >= warnAfter) {
      if (warned?.pid === holder.pid) return
      warned = { pid: holder.pid, since: warned?.since ?? Date.now() - holder.seconds * 1000 }
      yield* Effect.logWarning(
        "the log's feed is held back by an open transaction: events committed since it began reach webhooks and projections only once it ends",
        { pid: holder.pid, application: holder.application, database: holder.database, state: holder.state, openSeconds: Math.round(holder.seconds) }
      )
      return
    }
    if (warned === undefined) return
    const heldSeconds = Math.round((Date.now() - warned.since) / 1000)
    warned = undefined
    yield* Effect.logInfo("the log's feed moves again", { heldSeconds })
  }).pipe(Effect.ignore)
  yield* Effect.forkScoped(Effect.repeat(check, Schedule.spaced(Math.min(10_000, warnAfter * 1000))))
}))
