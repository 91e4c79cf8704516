/**
 * Who runs the actors (docs/architecture.md, "Actors"): each process is a runner, and each
 * runner lives as a series of incarnations. An incarnation holds a lease in Postgres (a row of
 * `runners` whose `expires_at` the runner pushes forward every RENEW_EVERY, TTL ahead by the
 * database's clock). Every actor of the process (execution dispatches, webhook lanes, the
 * dispatcher, pollers) runs in the scope of the incarnation that owns it, and what it owns
 * names that incarnation: executions record it as their owner; keyed leases (Leases.ts) hold
 * its id.
 *
 * The lease survives a lost connection: renewals go through the pool, so a terminated backend
 * costs one failed renewal, not the lease. Only when no renewal has succeeded for TTL - MARGIN
 * (measured locally from the moment the last successful renewal was sent, which precedes the
 * database's `now()` of that renewal) does the incarnation end: its scope closes, which
 * interrupts every actor it ran (an in-flight webhook attempt is aborted), and only then is its
 * row deleted. Peers take over what a runner owned only when its row has expired or is gone, so
 * a runner always stops before anyone else may start the same work. The process then registers
 * a new incarnation and goes on; its old executions are recovered like a dead peer's.
 *
 * Memory mode has one incarnation that never ends.
 */
import { Cause, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { hostname } from "node:os"
import { backoff } from "../Backoff.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import { onStorage } from "../eventlog/Database.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { newId } from "../Ids.ts"
import { integer } from "../Settings.ts"
import { keyRingOf } from "../access/Secrets.ts"

export interface Incarnation {
  /** The owner id recorded by what this incarnation owns. */
  readonly id: string
  /**
   * A scope for the actors a service runs in this incarnation: a child of `parent`, the
   * service's own scope, so that shutting the service down stops its actors before the services
   * they use go away; and closed by the runner when the lease is lost, which interrupts them.
   */
  readonly actorScope: (parent: Scope.Scope) => Effect.Effect<Scope.Closeable>
  /** Milliseconds (`performance.now()`) until which the lease certainly holds. */
  readonly safeUntil: () => number
  /** Completes when the incarnation has ended (its actors have stopped). */
  readonly ended: Deferred.Deferred<void>
}

/** The scopes handed out by one incarnation, closed together when it ends. */
const makeActorScopes = () => {
  const scopes = new Set<Scope.Closeable>()
  let closed = false
  const actorScope = (parent: Scope.Scope) =>
    Effect.gen(function*() {
      const scope = yield* Scope.fork(parent)
      if (closed) yield* Scope.close(scope, Exit.void)
      else {
        scopes.add(scope)
        yield* Scope.addFinalizer(scope, Effect.sync(() => void scopes.delete(scope)))
      }
      return scope
    })
  const closeAll = Effect.suspend(() => {
    closed = true
    return Effect.forEach([...scopes], (scope) => Scope.close(scope, Exit.void), { concurrency: "unbounded", discard: true })
  })
  return { actorScope, closeAll }
}

export interface RunnerShape {
  /** The live incarnation; while none is registered (the database is away), waits for one. */
  readonly current: Effect.Effect<Incarnation>
  /**
   * The live incarnation, or `StoreUnavailable` at once while none is registered: for requests,
   * which are answered 503 rather than held until the database answers again (none is
   * registered only after the store went a lease's time without answering).
   */
  readonly registered: Effect.Effect<Incarnation, StoreUnavailable>
  /** Ids of the incarnations whose lease is live now, this one's included. */
  readonly alive: Effect.Effect<ReadonlySet<string>, StoreUnavailable>
}

export class Runner extends Context.Service<Runner, RunnerShape>()("app/infra/actors/Runner") {}

export const runnerMigrations: ReadonlyArray<Migration> = [{
  id: 50,
  name: "runner_leases",
  statements: [
    `CREATE TABLE runners (
      runner_id text PRIMARY KEY,
      expires_at timestamptz NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      host text NOT NULL,
      pid integer NOT NULL
    )`,
    `CREATE TABLE actor_leases (
      lease_key text PRIMARY KEY,
      runner_id text NOT NULL,
      acquired_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX actor_leases_runner ON actor_leases (runner_id)`
  ]
}, {
  id: 51,
  name: "runner_key_ids",
  // The secret keys each process holds, by their public names (access/Secrets.ts, KeyRing.ids),
  // comma-separated: `secrets reseal` refuses while a live process lacks the new key.
  statements: [`ALTER TABLE runners ADD COLUMN key_ids text`]
}]

/**
 * Runs `actor` in every incarnation, one after the other, for as long as the layer lives: a
 * singleton loop (the dispatcher, a sweep) is restarted by the next incarnation when one ends.
 */
export const supervise = <E, R>(
  runner: RunnerShape,
  actor: (incarnation: Incarnation) => Effect.Effect<void, E, R>
): Effect.Effect<never, never, R> =>
  Effect.forever(Effect.gen(function*() {
    const incarnation = yield* runner.current
    const scope = yield* incarnation.actorScope(yield* Effect.scope)
    yield* Effect.forkIn(actor(incarnation).pipe(Effect.catchCause((cause) => Effect.logError("actor stopped", cause))), scope)
    yield* Deferred.await(incarnation.ended)
  }).pipe(Effect.scoped))

const memoryIncarnation = Effect.gen(function*() {
  const ended = yield* Deferred.make<void>()
  const { actorScope } = makeActorScopes()
  return { id: "local", actorScope, safeUntil: () => Number.POSITIVE_INFINITY, ended } satisfies Incarnation
})

/** One process, one incarnation, never lost. */
export const layerMemory: Layer.Layer<Runner> = Layer.effect(
  Runner,
  Effect.map(memoryIncarnation, (incarnation) =>
    Runner.of({
      current: Effect.succeed(incarnation),
      registered: Effect.succeed(incarnation),
      alive: Effect.succeed(new Set([incarnation.id]))
    }))
)

/** The lease timings; tests shorten the TTL (SERVICE_LEASE_TTL_MS) to see takeovers quickly. */
export const leaseTimings = Effect.map(integer("SERVICE_LEASE_TTL_MS", 20_000, 1_000, 600_000), (ttlMs) => ({
  ttlMs,
  renewEveryMs: Math.max(100, Math.floor(ttlMs / 10)),
  /** Room for clock-rate differences and a scheduler delay between deadline and interruption. */
  marginMs: Math.max(200, Math.floor(ttlMs / 10))
}))

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

/** Why a request finds no incarnation: the store's connection is as good as lost (an outage, 503). */
const noLease = new SqlError({
  reason: new ConnectionError({
    cause: new Error("no runner lease: the database has not answered for a lease's time"),
    message: "no runner lease: the database has not answered for a lease's time",
    operation: "lease"
  })
})

export const layerPg: Layer.Layer<Runner, never, SqlClient.SqlClient> = Layer.effect(
  Runner,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const timings = yield* Effect.orDie(leaseTimings)
    const layerScope = yield* Effect.scope
    const ttl = `${timings.ttlMs} milliseconds`
    const host = hostname()
    // On Postgres the service requires the key (access/KeyCheck.ts); a runner built without one
    // (a test of leases alone) records none.
    const keyIds = yield* keyRingOf(true).pipe(Effect.map((ring) => ring.ids.join(",")), Effect.orElseSucceed(() => null))

    const register = Effect.fnUntraced(function*(id: string) {
      const sent = performance.now()
      yield* sql`INSERT INTO runners (runner_id, expires_at, host, pid, key_ids)
        VALUES (${id}, now() + ${ttl}::interval, ${host}, ${process.pid}, ${keyIds})`
      return sent
    })
    /**
     * Removes what runners that died without a clean stop (kill -9) left: rows expired for longer
     * than a TTL, and keyed leases whose runner has no row. Expired rows protect nothing (peers
     * read them as gone), so this only keeps the tables small; it runs at every registration.
     */
    const sweep = sql`DELETE FROM runners WHERE expires_at < now() - ${ttl}::interval`.pipe(
      Effect.andThen(sql`DELETE FROM actor_leases l WHERE NOT EXISTS (SELECT 1 FROM runners r WHERE r.runner_id = l.runner_id)`),
      Effect.catch((error) => Effect.logWarning("runner lease: cannot sweep the rows of stopped runners", error))
    )
    /** True when the lease was pushed forward; false when it had already lapsed (or was taken). */
    const renew = (id: string) =>
      sql<{ runner_id: string }>`UPDATE runners SET expires_at = now() + ${ttl}::interval
        WHERE runner_id = ${id} AND expires_at > now() RETURNING runner_id`.pipe(Effect.map((rows) => rows.length === 1))

    let live: Deferred.Deferred<Incarnation> = yield* Deferred.make<Incarnation>()
    /** The newest incarnation, whose rows the finalizer removes. */
    let newest: Incarnation | undefined

    /**
     * Waits for `effect` until `deadline`, which goes on detached when the wait ends: a query hung
     * on a dead link can neither hold the renewals back nor delay the fence. When no answer has
     * come by `overdueAt`, `overdue` runs first: it is said while the wait goes on, not in a race
     * with the fence, which ends the incarnation at that same deadline.
     */
    const within = <A, E>(effect: Effect.Effect<A, E>, overdueAt: number, deadline: number, overdue: Effect.Effect<void>) =>
      Effect.gen(function*() {
        const fiber = yield* Effect.forkIn(effect, layerScope)
        const waitUntil = (at: number) => Fiber.await(fiber).pipe(Effect.timeoutOption(Duration.millis(Math.max(1, at - performance.now()))))
        const early = yield* waitUntil(overdueAt)
        if (early._tag === "Some") return early
        yield* overdue
        return yield* waitUntil(deadline)
      })

    /**
     * When the database stopped answering this process (the first renewal that failed, else the
     * first refused registration); cleared once it answers again. It outlives an incarnation, so
     * the line of the next one says how long the database was away, not how long registering took.
     */
    let failingSince: number | undefined

    /** One incarnation from registration to its end; returns once its actors have stopped. */
    const incarnate = Effect.gen(function*() {
      const id = newId("run")
      // The first refusal says so; the retries that follow do not repeat it (an outage would
      // write a line per retry). A process registering anew after a lost lease says when it has.
      let refused = false
      const sent = yield* register(id).pipe(
        Effect.tapError((error) => {
          if (refused) return Effect.void
          refused = true
          failingSince ??= performance.now()
          return Effect.logWarning("runner lease: cannot register; retrying", error)
        }),
        Effect.retry(backoff())
      )
      if (newest !== undefined) {
        const waited = failingSince === undefined ? "" : ` after ${((performance.now() - failingSince) / 1000).toFixed(1)} s without the database`
        yield* Effect.logInfo(`runner lease: registered anew as ${id}${waited}; actors start again`)
      }
      failingSince = undefined
      yield* Effect.forkIn(sweep, layerScope)
      let safeUntil = sent + timings.ttlMs - timings.marginMs
      const scopes = makeActorScopes()
      const ended = yield* Deferred.make<void>()
      const incarnation: Incarnation = { id, actorScope: scopes.actorScope, safeUntil: () => safeUntil, ended }
      newest = incarnation
      yield* Deferred.succeed(live, incarnation)
      // The fence: ends the incarnation when its deadline passes without a renewal. It only
      // sleeps, so nothing the database does can delay it.
      const fence = Effect.gen(function*() {
        while (true) {
          const left = safeUntil - performance.now()
          if (left <= 0) return
          yield* Effect.sleep(Duration.millis(left))
        }
      })
      // Renewals push the deadline forward; one that finds the lease lapsed ends it at once. The
      // first that fails, and the first answered after failures, say so: an operator sees when
      // the database stopped answering this process and when it came back.
      const renewals = Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(Duration.millis(timings.renewEveryMs))
          const at = performance.now()
          const failing = (why: unknown) =>
            Effect.suspend(() => {
              if (failingSince !== undefined) return Effect.void
              failingSince = at
              return Effect.logWarning(`runner lease: the database did not answer a renewal; retrying every ${timings.renewEveryMs} ms`, why)
            })
          // Overdue once half the time left has passed: worth a warning, and said well before the
          // fence (a slow answer under load, which still comes in time, says nothing).
          const overdueAt = at + (safeUntil - at) / 2
          const result = yield* within(renew(id), overdueAt, safeUntil, failing("no answer in time"))
          // Whether the lease is still ours; undefined when the renewal got no answer.
          const renewed = result._tag === "Some" && Exit.isSuccess(result.value) ? result.value.value : undefined
          if (renewed === undefined) {
            // Interrupted, not refused: the process is stopping and its layers are closing.
            if (result._tag === "Some" && Exit.isFailure(result.value) && Cause.hasInterruptsOnly(result.value.cause)) continue
            yield* failing(result._tag === "Some" && Exit.isFailure(result.value) ? Cause.squash(result.value.cause) : "no answer in time")
            continue
          }
          if (failingSince !== undefined) {
            const seconds = ((performance.now() - failingSince) / 1000).toFixed(1)
            failingSince = undefined
            if (renewed) yield* Effect.logInfo(`runner lease: the database answers again after ${seconds} s; the lease was kept`)
          }
          if (!renewed) return
          safeUntil = Math.max(safeUntil, at + timings.ttlMs - timings.marginMs)
        }
      })
      yield* Effect.raceFirst(fence, renewals)
      // Lost: stop everything this incarnation ran before anyone may take it over, then say so.
      live = yield* Deferred.make<Incarnation>()
      yield* Effect.logWarning(`runner lease ${id} lost: its actors stopped; registering anew`)
      yield* scopes.closeAll
      yield* Deferred.succeed(ended, undefined)
      // Its row no longer protects anything: peers may take over at once.
      yield* sql`DELETE FROM runners WHERE runner_id = ${id}`.pipe(Effect.ignore)
    })

    yield* Effect.forkScoped(Effect.forever(incarnate))
    yield* Deferred.await(live)
    // A clean stop hands everything over at once: no peer waits for the lease to expire. The
    // services that ran actors depend on the runner, so they have stopped them by now.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (newest === undefined) return
        yield* sql`DELETE FROM actor_leases WHERE runner_id = ${newest.id}`.pipe(Effect.ignore)
        yield* sql`DELETE FROM runners WHERE runner_id = ${newest.id}`.pipe(Effect.ignore)
      })
    )
    return Runner.of({
      current: Effect.suspend(() => Deferred.await(live)),
      registered: Effect.suspend(() =>
        Deferred.isDoneUnsafe(live)
          ? Deferred.await(live)
          : Effect.fail(unavailable(noLease))),
      alive: sql<{ runner_id: string }>`SELECT runner_id FROM runners WHERE expires_at > now()`.pipe(
        Effect.map((rows) => new Set(rows.map((row) => row.runner_id))),
        Effect.mapError(unavailable)
      )
    })
  })
)

export const layer = onStorage(layerMemory, layerPg)
