/**
 * Outbound concurrency caps per project + toolkit (spec, "Project rate limits": a manifest's
 * `limits.maxConcurrentExecutionsPerProject`). A permit is held by one execution from dispatch
 * until its outcome. Sync requests only try (a full cap is a 429 before allocation); async
 * executions wait in FIFO order inside this process until a permit frees.
 *
 * The holding itself lives in a `PermitStore`: counters in memory, or a table on Postgres where
 * an advisory transaction lock per (project, toolkit) makes count-then-insert atomic across
 * processes. Waiters of this process are woken by local releases and poll for releases made
 * by other processes.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { StoreUnavailable } from "./EventStore.ts"
import { StoreUnavailable as Unavailable } from "./EventStore.ts"

export interface PermitKey {
  readonly projectId: string
  readonly toolkit: string
  readonly executionId: string
}

export interface PermitStore {
  /** Takes a permit unless `cap` are held by others; true when held (also when already held). */
  readonly tryInsert: (key: PermitKey, cap: number) => Effect.Effect<boolean, StoreUnavailable>
  readonly remove: (key: PermitKey) => Effect.Effect<void, StoreUnavailable>
  readonly reclaimStale: Effect.Effect<void, StoreUnavailable>
}

export interface ExecutionPermitsShape {
  /** Sync dispatch: a permit now, or false when the cap is full or others queue for it. */
  readonly tryAcquire: (key: PermitKey, cap: number) => Effect.Effect<boolean, StoreUnavailable>
  /** Async dispatch: waits its turn (FIFO in this process); interruption leaves the queue. */
  readonly acquire: (key: PermitKey, cap: number) => Effect.Effect<void, StoreUnavailable>
  /** Never fails: a permit that cannot be deleted now is reclaimed at the next start-up. */
  readonly release: (key: PermitKey) => Effect.Effect<void>
  /** Start-up: frees permits of executions that are no longer pending or running. */
  readonly reclaimStale: Effect.Effect<void, StoreUnavailable>
}

export class ExecutionPermits extends Context.Service<ExecutionPermits, ExecutionPermitsShape>()(
  "app/infra/ExecutionPermits"
) {}

const laneOf = (key: PermitKey) => `${key.projectId}/${key.toolkit}`

/** How often a waiter retries when releases may happen in another process. */
const POLL_MS = 250

interface Waiter {
  readonly executionId: string
  readonly wake: Deferred.Deferred<void>
}

export const makePermits = (store: PermitStore, options: { readonly poll: boolean }): ExecutionPermitsShape => {
  const queues = new Map<string, Array<Waiter>>()

  const wakeHead = (lane: string) => {
    const head = queues.get(lane)?.[0]
    if (head !== undefined) Deferred.doneUnsafe(head.wake, Effect.void)
  }

  const leave = (lane: string, waiter: Waiter) => {
    const queue = queues.get(lane)
    if (queue === undefined) return
    const index = queue.indexOf(waiter)
    if (index >= 0) queue.splice(index, 1)
    if (queue.length === 0) queues.delete(lane)
    else if (index === 0) wakeHead(lane)
  }

  const acquire = (key: PermitKey, cap: number): Effect.Effect<void, StoreUnavailable> =>
    Effect.suspend(() => {
      const lane = laneOf(key)
      const queue = queues.get(lane) ?? []
      queues.set(lane, queue)
      let waiter: Waiter = { executionId: key.executionId, wake: Deferred.makeUnsafe<void>() }
      queue.push(waiter)
      const attempt: Effect.Effect<void, StoreUnavailable> = Effect.suspend(() => {
        if (queue[0] !== waiter) return Effect.andThen(waitTurn, attempt)
        return Effect.flatMap(store.tryInsert(key, cap), (held) => (held ? Effect.void : Effect.andThen(waitTurn, attempt)))
      })
      const waitTurn = Effect.suspend(() => {
        const wait = Deferred.await(waiter.wake)
        return (options.poll ? Effect.timeoutOption(wait, POLL_MS) : wait).pipe(
          Effect.andThen(Effect.sync(() => {
            const fresh: Waiter = { executionId: waiter.executionId, wake: Deferred.makeUnsafe<void>() }
            const index = queue.indexOf(waiter)
            if (index >= 0) queue[index] = fresh
            waiter = fresh
          }))
        )
      })
      // The dispatcher releases on every outcome, so a permit granted just before an
      // interruption is returned there; here the waiter only leaves the queue.
      return Effect.ensuring(attempt, Effect.sync(() => leave(lane, waiter)))
    })

  return {
    tryAcquire: (key, cap) =>
      Effect.suspend(() => (queues.has(laneOf(key)) ? Effect.succeed(false) : store.tryInsert(key, cap))),
    acquire,
    release: (key) =>
      store.remove(key).pipe(
        Effect.catch((error) => Effect.logWarning("permit release failed; reclaimed at start-up", error)),
        Effect.andThen(Effect.sync(() => wakeHead(laneOf(key))))
      ),
    reclaimStale: store.reclaimStale
  }
}

export const memoryPermitStore = (): PermitStore => {
  const lanes = new Map<string, Set<string>>()
  return {
    tryInsert: (key, cap) =>
      Effect.sync(() => {
        const lane = laneOf(key)
        const held = lanes.get(lane) ?? new Set<string>()
        lanes.set(lane, held)
        if (held.has(key.executionId)) return true
        if (held.size >= cap) return false
        held.add(key.executionId)
        return true
      }),
    remove: (key) =>
      Effect.sync(() => {
        const lane = laneOf(key)
        const held = lanes.get(lane)
        held?.delete(key.executionId)
        if (held?.size === 0) lanes.delete(lane)
      }),
    reclaimStale: Effect.void
  }
}

/** Permits table (migrations 200-299). */
export const permitMigrations = [{
  id: 200,
  name: "execution_permits",
  statements: [
    `CREATE TABLE execution_permits (
      execution_id text PRIMARY KEY,
      project_id text NOT NULL,
      toolkit text NOT NULL,
      acquired_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX execution_permits_lane ON execution_permits (project_id, toolkit)`
  ]
}] as const

/** Advisory lock class of permit lanes (the second key is the lane's hash). */
const LOCK_CLASS = 7_200

const unavailable = (cause: unknown) => new Unavailable({ cause })

export const pgPermitStore = (sql: SqlClient.SqlClient): PermitStore => {
  return {
    tryInsert: (key, cap) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${laneOf(key)}))`
        const rows = yield* sql<{ held: number }>`
          INSERT INTO execution_permits (execution_id, project_id, toolkit)
          SELECT ${key.executionId}, ${key.projectId}, ${key.toolkit}
          WHERE (SELECT count(*) FROM execution_permits
                 WHERE project_id = ${key.projectId} AND toolkit = ${key.toolkit}
                   AND execution_id <> ${key.executionId}) < ${cap}
          ON CONFLICT (execution_id) DO UPDATE SET acquired_at = excluded.acquired_at
          RETURNING 1 AS held`
        return rows.length > 0
      })).pipe(Effect.mapError(unavailable)),
    remove: (key) =>
      sql`DELETE FROM execution_permits WHERE execution_id = ${key.executionId}`.pipe(
        Effect.asVoid,
        Effect.mapError(unavailable)
      ),
    // One process per database: at start-up no permit of a live execution is really held.
    reclaimStale: sql`DELETE FROM execution_permits p WHERE NOT EXISTS (
        SELECT 1 FROM v_executions v
        WHERE v.execution_id = p.execution_id AND v.status IN ('pending', 'running'))`.pipe(
      Effect.asVoid,
      Effect.mapError(unavailable)
    )
  }
}

export const layerMemory = Layer.sync(ExecutionPermits, () => makePermits(memoryPermitStore(), { poll: false }))

export const layerPg = Layer.effect(
  ExecutionPermits,
  Effect.map(SqlClient.SqlClient, (sql) => makePermits(pgPermitStore(sql), { poll: true }))
)
