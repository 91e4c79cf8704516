/**
 * The Postgres clients of the service: one pool, and over it a client whose every statement (and
 * every wait for a connection) is bounded in time, beside one that is not.
 *
 * Why: a Postgres that hangs (its processes stopped, a frozen network path) refuses nothing, so
 * without a bound a statement waits until it answers again, and so does the request that sent
 * it. With the bound it fails as a lost connection would (a `SqlError` whose reason is a
 * `ConnectionError`), which every caller already treats as the store being unavailable: requests
 * answer 503 with `Retry-After`, background work retries with backoff.
 *
 * A statement that ran out of time is abandoned with its connection: the socket is destroyed at
 * once, so the pool replaces it, the backend rolls back an open transaction when it sees the
 * connection gone, and nothing later runs on a session whose state is unknown. The caller does
 * not wait for that either (@effect/sql-pg's own interruption drains the statement and sends a
 * cancel request, which against a stopped server takes seconds). What had already reached the
 * server is still run when it resumes: a commit abandoned that way may be applied, as after any
 * connection lost during a commit; appends name the stream version they expect, so a retry of
 * the same change is refused rather than applied twice.
 *
 * One statement out of time marks the store as hung: until a probe (`SELECT 1`, once a second)
 * is answered again, the bounded client fails every statement and every wait for a connection
 * at once, the same way. Without that, work queued behind a hung statement (the event log's
 * single writer, a transaction waiting for its connection) would wait a bound of its own after
 * it, and requests would be answered after several bounds instead of one.
 *
 * The unbounded client is for work that may legitimately run long: migrations at start-up and
 * the operator commands (`projections replay`, `secrets reseal`).
 */
import { PgClient, PgPool } from "@effect/sql-pg"
import type { PgConnection } from "@effect/sql-pg"
import { Effect, Fiber, type Scope, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { SqlClient } from "effect/sql"
import type { Connection } from "effect/sql/SqlConnection"
import { ConnectionError, SqlError, UnknownError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"

const connectionLost = (message: string, operation: string) =>
  new SqlError({ reason: new ConnectionError({ cause: new Error(message), message, operation }) })

/** What a statement that ran out of time fails with: a lost connection, as far as callers go. */
export const noAnswer = (ms: number, operation: string) => connectionLost(`the database gave no answer within ${ms} ms`, operation)

/** What statements fail with at once while the store is taken for hung. */
const stillHung = (operation: string) =>
  connectionLost("the database has not answered since a statement ran out of time; waiting for it to answer again", operation)

/** How often a hung store is asked whether it answers again. */
export const PROBE_EVERY_MS = 1_000

/**
 * The bound, and whether the store is taken for hung (a statement ran out of time and no probe
 * has been answered since).
 */
export class Bound {
  readonly ms: number
  hung = false
  /** When the store was last taken for hung (performance.now()), for the log line of its return. */
  hungAt = 0
  constructor(ms: number) {
    this.ms = ms
  }

  /** `effect` within the bound; `abandon` cuts what it waits on when the bound (or the caller) gives up. */
  run<A, R>(effect: Effect.Effect<A, SqlError, R>, operation: string, abandon: () => void): Effect.Effect<A, SqlError, R> {
    return Effect.suspend(() =>
      this.hung
        ? Effect.fail(stillHung(operation))
        : withoutWaiting(effect, this.ms, abandon, () => {
          if (!this.hung) this.hungAt = performance.now()
          this.hung = true
          return noAnswer(this.ms, operation)
        })
    )
  }
}

/**
 * `self` bounded by `ms`, answered without waiting for `self` to wind down: when the time is up,
 * or when the caller is interrupted, `abandon` runs first (to cut what `self` waits on), then
 * `self` is interrupted in the background. On time-out the caller fails with `timedOut()`.
 */
export const withoutWaiting = <A, E, E2, R>(
  self: Effect.Effect<A, E, R>,
  ms: number,
  abandon: () => void,
  timedOut: () => E2
): Effect.Effect<A, E | E2, R> =>
  Effect.flatMap(Effect.forkDetach(self, { startImmediately: true, uninterruptible: false }), (fiber) =>
    Fiber.join(fiber).pipe(
      Effect.timeoutOrElse({
        duration: ms,
        orElse: () => Effect.suspend(() => Effect.fail(timedOut()))
      }),
      Effect.onExit((exit) => {
        if (exit._tag === "Success" || fiber.pollUnsafe() !== undefined) return Effect.void
        return Effect.suspend(() => {
          abandon()
          return Effect.asVoid(Effect.forkDetach(Fiber.interrupt(fiber)))
        })
      })
    ))

/**
 * Cuts a session at once: destroys its socket and fails what runs on it. @effect/sql-pg offers
 * no public way to do so; its sessions (and their pinned views, through `base`) have `fatal`,
 * which is what its own socket errors call. Without it the session is left to the pool, which
 * retires it once its abandoned statement has drained.
 */
const cut = (connection: PgConnection.PgConnection, error: SqlError): void => {
  const target = connection as unknown as { readonly base?: unknown; readonly fatal?: unknown }
  const session = (target.base ?? target) as { readonly fatal?: unknown }
  if (typeof session.fatal === "function") (session.fatal as (error: SqlError) => void).call(session, error)
}

type TransformRows = (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined

/** A session as `SqlClient` wants it, each statement bounded by `ms` when `ms` is set. */
class BoundedConnection implements Connection {
  readonly connection: PgConnection.PgConnection
  readonly limit: Bound | undefined

  constructor(connection: PgConnection.PgConnection, limit: Bound | undefined) {
    this.connection = connection
    this.limit = limit
  }

  /** Set once a statement was abandoned and the session cut with it. */
  abandoned = false

  private bound<A>(effect: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> {
    const limit = this.limit
    if (limit === undefined) return effect
    // An abandoned statement takes its session with it (the module's comment says why).
    return limit.run(effect, "query", () => {
      this.abandoned = true
      cut(this.connection, noAnswer(limit.ms, "query"))
    })
  }

  private rows(sql: string, params: ReadonlyArray<unknown>, prepare: boolean, transformRows: TransformRows) {
    // The transaction of a cut session is the server's to roll back (it does once it sees the
    // session gone); a ROLLBACK sent here would fail, and the transaction's end would turn
    // that into a defect instead of the connection loss it is.
    if (this.abandoned && /^ROLLBACK\b/.test(sql)) return Effect.succeed([])
    const rows = Effect.map(this.connection.query(sql, params, prepare), (result) => result.rows)
    return this.bound(transformRows === undefined ? rows : Effect.map(rows, transformRows))
  }

  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.rows(sql, params, true, transformRows)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.connection.query(sql, params))
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    return this.rows(sql, params, false, transformRows)
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.connection.queryValues(sql, params))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.bound(this.connection.queryValues(sql, params, false))
  }
  /** Streams are not bounded: they hold their session for as long as the reader wants. */
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows) {
    const stream = this.connection.stream(sql, params)
    return transformRows === undefined
      ? stream
      : Stream.mapArray(stream, (rows) => transformRows(rows) as unknown as typeof rows)
  }
}

/** PostgreSQL answers `ROLLBACK` to a `COMMIT` of an aborted transaction (as PgClient checks). */
const commit = (conn: Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(conn.executeRaw("COMMIT", []), (result) =>
    (result as { readonly command?: unknown }).command === "ROLLBACK"
      ? Effect.fail(
        new SqlError({
          reason: new UnknownError({
            cause: new Error("COMMIT rolled back an aborted transaction"),
            message: "COMMIT rolled back an aborted transaction",
            operation: "commit"
          })
        })
      )
      : Effect.void)

const PgJson = Statement.custom<PgClient.PgCustom>("PgJson")

/** A client over `pool`; `limit` bounds each statement and each wait for a connection. */
const clientOver = (pool: PgPool.PgPool, config: PgClient.PgPoolConfig, limit: Bound | undefined) => {
  const bound = <A>(acquire: Effect.Effect<A, SqlError, Scope.Scope>): Effect.Effect<A, SqlError, Scope.Scope> =>
    limit === undefined ? acquire : limit.run(acquire, "connect", () => {})
  const wrap = (connection: PgConnection.PgConnection) => new BoundedConnection(connection, limit)
  return Effect.gen(function*() {
    const sql = yield* SqlClient.make({
      acquirer: Effect.map(bound(pool.get), wrap),
      transactionAcquirer: Effect.map(bound(pool.reserve), wrap),
      driver: "pg",
      compiler: PgClient.makeCompiler(config.transformQueryNames, config.transformJson),
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      spanAttributes: [
        ["db.system.name", "postgresql"],
        ["db.namespace", config.database ?? config.username ?? "postgres"]
      ]
    })
    const client: PgClient.PgClient = Object.assign(sql, {
      [PgClient.TypeId]: PgClient.TypeId,
      config,
      json: (value: unknown) => Statement.fragment([PgJson(value, undefined, undefined)]),
      // A listener holds its session for as long as it listens: never bounded.
      listen: (channel: string) => Effect.flatMap(pool.reserve, (connection) => connection.listen(channel)),
      notify: (channel: string, payload: string) =>
        Effect.asVoid(Effect.scoped(Effect.flatMap(bound(pool.get), (connection) =>
          wrap(connection).executeRaw(`SELECT pg_notify($1, $2)`, [channel, payload]))))
    })
    return client
  })
}

/**
 * While the store is taken for hung, asks it once a second whether it answers, within the
 * bound, past the gate the client's statements stop at; the first answer opens it again.
 */
const probe = (pool: PgPool.PgPool, limit: Bound) => {
  const ask = Effect.scoped(Effect.flatMap(
    withoutWaiting(pool.get, limit.ms, () => {}, () => noAnswer(limit.ms, "connect")),
    (connection) =>
      withoutWaiting(connection.query("SELECT 1", [], false), limit.ms, () => cut(connection, noAnswer(limit.ms, "query")), () =>
        noAnswer(limit.ms, "query"))
  ))
  // The hang's start and end are logged once each, from here (the statement that ran out of time
  // only fails): operators see why requests were answered 503 at once, and for how long.
  let announced = false
  return Effect.forever(Effect.andThen(
    Effect.sleep(PROBE_EVERY_MS),
    Effect.suspend(() => {
      if (!limit.hung) return Effect.void
      const announce = announced
        ? Effect.void
        : Effect.logWarning(
          `the database gave no answer within ${limit.ms} ms (SERVICE_STORE_TIMEOUT_MS): statements fail at once until it answers again, asked every ${PROBE_EVERY_MS} ms`
        )
      announced = true
      return Effect.andThen(
        announce,
        ask.pipe(
          Effect.andThen(Effect.suspend(() => {
            limit.hung = false
            announced = false
            return Effect.logInfo(`the database answers again after ${((performance.now() - limit.hungAt) / 1000).toFixed(1)} s`)
          })),
          Effect.ignore
        )
      )
    })
  ))
}

export interface PgClients {
  /** Every statement bounded: what the serving process runs on. */
  readonly bounded: PgClient.PgClient
  /** No bound: migrations and the operator commands. */
  readonly unbounded: PgClient.PgClient
}

/** One pool of `config`, and the two clients over it; `ms` undefined bounds nothing. */
export const make = (config: PgClient.PgPoolConfig, ms: number | undefined): Effect.Effect<PgClients, SqlError, Scope.Scope> =>
  Effect.gen(function*() {
    const pool = yield* PgPool.make(config)
    const unbounded = yield* clientOver(pool, config, undefined)
    if (ms === undefined) return { bounded: unbounded, unbounded }
    const limit = new Bound(ms)
    yield* Effect.forkScoped(probe(pool, limit))
    return { bounded: yield* clientOver(pool, config, limit), unbounded }
  }).pipe(Effect.provide(Reactivity.layer))
