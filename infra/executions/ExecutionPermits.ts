/**
 * Outbound concurrency caps per project + toolkit (spec, "Project rate limits": a manifest's
 * `limits.maxConcurrentExecutionsPerProject`). A permit is held by one execution from dispatch
 * until its outcome. Sync requests only try (a full cap is a 429 before allocation); async
 * executions wait in FIFO order inside this process until a permit frees.
 *
 * The holding itself lives in a `PermitStore`: counters in memory, or a table on Postgres where
 * an advisory transaction lock per (project, toolkit) makes count-then-insert atomic across
 * processes (PgExecutionPermits.ts). Waiters of this process are woken by local releases and poll for releases made
 * by other processes.
 */
import { Context, Deferred, Effect, Layer, type Scope } from "effect"
import { backoff } from "../Backoff.ts"
import type { StoreUnavailable } from "../eventlog/EventStore.ts"

export interface PermitKey {
  readonly projectId: string
  readonly toolkit: string
  readonly executionId: string
}

export interface PermitStore {
  /** Takes a permit unless `cap` are held by others; true when held (also when already held). */
  readonly tryInsert: (key: PermitKey, cap: number) => Effect.Effect<boolean, StoreUnavailable>
  /**
   * Frees a permit. On Postgres a permit already counts as free once its execution is terminal,
   * so the row's deletion is not waited for.
   */
  readonly remove: (key: PermitKey) => Effect.Effect<void, StoreUnavailable>
  /**
   * Frees a permit now unless its execution is recorded and not terminal (a request applied after
   * its caller was answered 503 keeps it for the recovery that runs it); fails when the store does
   * not answer (`remove` may gather, and drops what fails).
   */
  readonly removeUnrecorded: (key: PermitKey) => Effect.Effect<void, StoreUnavailable>
  readonly reclaimStale: Effect.Effect<void, StoreUnavailable>
}

export interface ExecutionPermitsShape {
  /**
   * Async executions of this process have had to wait for this lane: a sync request does not
   * overtake them. One whose first try is still on its way to the store waits for nothing yet,
   * and the store decides between the two.
   */
  readonly queued: (key: PermitKey) => boolean
  /** Sync dispatch: a permit now, or false when the cap is full or others queue for it. */
  readonly tryAcquire: (key: PermitKey, cap: number) => Effect.Effect<boolean, StoreUnavailable>
  /** Async dispatch: waits its turn (FIFO in this process); interruption leaves the queue. */
  readonly acquire: (key: PermitKey, cap: number) => Effect.Effect<void, StoreUnavailable>
  /** Never fails: a permit that cannot be deleted now is reclaimed by recovery (`reclaimStale`). */
  readonly release: (key: PermitKey) => Effect.Effect<void>
  /**
   * Frees the permit of an execution never recorded whose grant or release met the store away:
   * a grant whose answer was lost may still commit, and a release then may not reach the store.
   * In the background, once the store answers, and once more a little later (a grant left hung
   * in the server commits when it resumes); otherwise its slot would count as held until the
   * store's reclaim, a minute on, and the project's cap be one short meanwhile.
   */
  readonly releaseUnrecorded: (key: PermitKey) => Effect.Effect<void>
  /** Recovery: deletes rows of permits that no execution holds any more (ended, or never recorded). */
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
  wake: Deferred.Deferred<void>
  /** It has had to wait (behind others, or refused by a full cap); not while its first try runs. */
  waited: boolean
}

/** How long a release of an unrecorded permit is retried while the store is away; the reclaim covers the rest. */
const UNRECORDED_RETRY_FOR = "2 minutes"
/** The second release of an unrecorded permit, after the first reached the store. */
const UNRECORDED_AGAIN_AFTER = "5 seconds"

export const makePermits = (
  store: PermitStore,
  options: { readonly poll: boolean; readonly scope?: Scope.Scope | undefined }
): ExecutionPermitsShape => {
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
      const waiter: Waiter = { executionId: key.executionId, wake: Deferred.makeUnsafe<void>(), waited: false }
      queue.push(waiter)
      const attempt: Effect.Effect<void, StoreUnavailable> = Effect.suspend(() => {
        if (queue[0] !== waiter) return Effect.andThen(waitTurn, attempt)
        return Effect.flatMap(store.tryInsert(key, cap), (held) => (held ? Effect.void : Effect.andThen(waitTurn, attempt)))
      })
      const waitTurn = Effect.suspend(() => {
        waiter.waited = true
        const wait = Deferred.await(waiter.wake)
        return (options.poll ? Effect.timeoutOption(wait, POLL_MS) : wait).pipe(
          Effect.andThen(Effect.sync(() => {
            waiter.wake = Deferred.makeUnsafe<void>()
          }))
        )
      })
      // The dispatcher releases on every outcome, so a permit granted just before an
      // interruption is returned there; here the waiter only leaves the queue.
      return Effect.ensuring(attempt, Effect.sync(() => leave(lane, waiter)))
    })

  const queued = (key: PermitKey) => queues.get(laneOf(key))?.some((waiter) => waiter.waited) === true

  return {
    queued,
    tryAcquire: (key, cap) => Effect.suspend(() => (queued(key) ? Effect.succeed(false) : store.tryInsert(key, cap))),
    acquire,
    release: (key) =>
      store.remove(key).pipe(
        Effect.catch((error) => Effect.logWarning("permit release failed; recovery reclaims it", error)),
        Effect.andThen(Effect.sync(() => wakeHead(laneOf(key))))
      ),
    releaseUnrecorded: (key) => {
      const wake = Effect.sync(() => wakeHead(laneOf(key)))
      if (options.scope === undefined) return Effect.andThen(Effect.ignore(store.removeUnrecorded(key)), wake)
      const releasing = store.removeUnrecorded(key).pipe(
        Effect.retry(backoff()),
        Effect.timeoutOption(UNRECORDED_RETRY_FOR),
        Effect.andThen(wake),
        Effect.andThen(Effect.sleep(UNRECORDED_AGAIN_AFTER)),
        Effect.andThen(store.removeUnrecorded(key)),
        Effect.andThen(wake),
        Effect.ignore
      )
      return Effect.asVoid(Effect.forkIn(releasing, options.scope))
    },
    reclaimStale: store.reclaimStale
  }
}

export const memoryPermitStore = (): PermitStore => {
  const lanes = new Map<string, Set<string>>()
  const remove = (key: PermitKey) =>
    Effect.sync(() => {
      const lane = laneOf(key)
      const held = lanes.get(lane)
      held?.delete(key.executionId)
      if (held?.size === 0) lanes.delete(lane)
    })
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
    remove,
    removeUnrecorded: remove,
    reclaimStale: Effect.void
  }
}

export const layerMemory = Layer.sync(ExecutionPermits, () => makePermits(memoryPermitStore(), { poll: false }))
