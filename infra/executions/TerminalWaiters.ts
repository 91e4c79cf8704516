/**
 * Callers waiting for an execution's terminal record: a sync execute, the MCP gateway's
 * `tasks/result`, a client's wait. A waiter is a callback and a timer (no fiber per waiter).
 *
 * The process that dispatches an execution settles its waiters when it records the outcome. A
 * waiter in another process (an MCP session served by a peer instance, a dispatch that a peer
 * took over) learns it from the event log: while there is such a waiter, this process follows
 * the log for terminal execution events (NOTIFY wakes it; the follower's poll is the
 * guarantee), and stops following when the last one is gone. A waiter registers first, then
 * makes sure the follower runs, then reads the stream once: what committed before the follower
 * started, that read sees; what commits after, the follower does.
 */
import { Effect, Fiber, type Scope, Stream } from "effect"
import { executionCodec, STREAM_TYPE } from "../../domain/executions/Execution.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import type { EventStoreShape, StoreUnavailable } from "../eventlog/EventStore.ts"

const TERMINAL = new Set(["ExecutionSucceeded", "ExecutionFailed", "ExecutionCancelled"])
const PREFIX = `${STREAM_TYPE}-`

export interface TerminalWaitersDeps {
  readonly store: EventStoreShape
  /** With a database, outcomes may be recorded by other processes. */
  readonly durable: boolean
  /** Where the follower runs (the actor's scope). */
  readonly scope: Scope.Scope
  /** The execution's terminal record read afresh, or undefined while it is not terminal. */
  readonly readTerminal: (executionId: string) => Effect.Effect<ExecutionRecord | undefined, StoreUnavailable>
  /** Whether this process dispatches the execution (its outcome will be settled here). */
  readonly dispatchedHere: (executionId: string) => boolean
}

export const makeTerminalWaiters = (deps: TerminalWaitersDeps) => {
  const waiting = new Map<string, Set<(record: ExecutionRecord) => void>>()
  /** Each waiter's way to stop waiting with what it knows now (its fallback), by execution. */
  const releases = new Map<string, Set<() => void>>()
  let remote = 0
  let follower: Fiber.Fiber<void, StoreUnavailable> | undefined

  const settle = (executionId: string, record: ExecutionRecord) => {
    const listeners = waiting.get(executionId)
    if (listeners === undefined) return
    waiting.delete(executionId)
    for (const listener of listeners) listener(record)
  }

  const follow = (start: Parameters<EventStoreShape["follow"]>[0]) =>
    deps.store.follow(start).pipe(
      Stream.runForEach((event) => {
        if (event.streamType !== STREAM_TYPE || !TERMINAL.has(event.type)) return Effect.void
        const executionId = event.streamId.slice(PREFIX.length)
        if (!waiting.has(executionId)) return Effect.void
        const decoded = executionCodec.decode(event)
        if (decoded.type !== "ExecutionRequested" && decoded.type !== "ExecutionStarted" && "record" in decoded) {
          settle(executionId, decoded.record)
        }
        return Effect.void
      }),
      Effect.catchCause((cause) => Effect.logWarning("execution outcome follower stopped", cause))
    )

  /** Starts following from the log's head, unless a follower runs already. */
  const ensureFollower = Effect.suspend(() => {
    if (follower !== undefined) return Effect.void
    return Effect.flatMap(deps.store.head, (head) =>
      Effect.map(Effect.forkIn(follow(head), deps.scope), (fiber) => {
        if (follower === undefined && remote > 0) follower = fiber
        else Effect.runFork(Fiber.interrupt(fiber))
      }))
  })

  const stopFollowerIfIdle = () => {
    if (remote > 0 || follower === undefined) return
    const fiber = follower
    follower = undefined
    Effect.runFork(Fiber.interrupt(fiber))
  }

  /**
   * The terminal record, or `fallback()` when `timeoutMs` passes first. `fallback` gives the
   * current record as the caller knows it.
   */
  const wait = (executionId: string, timeoutMs: number, fallback: () => ExecutionRecord | undefined) => {
    const fromElsewhere = deps.durable && !deps.dispatchedHere(executionId)
    const registered = Effect.callback<ExecutionRecord | undefined>((resume) => {
      let done = false
      const finish = (record: ExecutionRecord | undefined) => {
        if (done) return
        done = true
        clearTimeout(timer)
        forget()
        resume(Effect.succeed(record))
      }
      const listener = (record: ExecutionRecord) => finish(record)
      const release = () => finish(fallback())
      const forget = () => {
        const set = waiting.get(executionId)
        set?.delete(listener)
        if (set?.size === 0) waiting.delete(executionId)
        const own = releases.get(executionId)
        own?.delete(release)
        if (own?.size === 0) releases.delete(executionId)
        if (fromElsewhere) {
          remote--
          stopFollowerIfIdle()
        }
      }
      const timer = setTimeout(() => finish(fallback()), timeoutMs)
      const set = waiting.get(executionId) ?? new Set()
      set.add(listener)
      waiting.set(executionId, set)
      const own = releases.get(executionId) ?? new Set()
      own.add(release)
      releases.set(executionId, own)
      if (fromElsewhere) {
        remote++
        // Registered: now the follower, then one read for what committed before it started.
        Effect.runFork(
          ensureFollower.pipe(
            Effect.andThen(deps.readTerminal(executionId)),
            Effect.tap((record) => Effect.sync(() => record !== undefined && finish(record))),
            Effect.catchCause((cause) => Effect.logWarning("execution outcome check failed", cause))
          )
        )
      }
      return Effect.sync(() => {
        if (done) return
        done = true
        clearTimeout(timer)
        forget()
      })
    })
    return registered
  }

  /**
   * Ends the waits on `executionId` now, each with what it knows (its fallback, as at its
   * timeout): a sync execute then answers 202 with the current record and its `Location`.
   */
  const release = (executionId: string) => {
    // Each end takes itself out of the set; a Set's iteration goes on past a deleted entry.
    for (const end of releases.get(executionId) ?? []) end()
  }

  /** Ends now every wait but those `keep` names (a clean stop keeps the executions running here). */
  const releaseAll = (keep: (executionId: string) => boolean) => {
    // Each release takes its execution out of the map; a Map's iteration goes on past it.
    for (const executionId of releases.keys()) if (!keep(executionId)) release(executionId)
  }

  return { settle, wait, release, releaseAll }
}
