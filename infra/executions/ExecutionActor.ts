/**
 * The Execution actor: one owner per execution id in this process, running under the process's
 * runner incarnation (infra/actors/Runner.ts, docs/architecture.md). A command folds the stream
 * `execution-<id>` (or takes the cached live state), decides (domain/executions/Execution.ts) and
 * appends with the expected version through the one command handler (eventlog/CommandHandler.ts),
 * under a per-id lock; a stale cache or a second owner loses the version race and the command
 * starts over on a fresh fold. Running a recorded execution (permit, start, adapter, outcome) is
 * ExecutionRun.ts.
 *
 * Creation is the exception: `execute` appends the first events at version 0 itself, with the
 * idempotency claim alongside, because a sync run may record its start (or, for a pure tool, its
 * whole run) in that same commit.
 */
import { Clock, Context, Effect, Fiber, Layer, type Scope } from "effect"
import {
  decide,
  type ExecutionCommand,
  type ExecutionEvent,
  type ExecutionRequested,
  type ExecutionState,
  evolve,
  executionCodec,
  isTerminalState,
  STREAM_TYPE,
  streamId
} from "../../domain/executions/Execution.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { normalized, NotFound, StateConflict } from "../../domain/Errors.ts"
import { type Decider, handleCommand } from "../eventlog/CommandHandler.ts"
import {
  type AppendRequest,
  type ConcurrencyConflict,
  EventStore,
  type LaneFull,
  type RecordedEvent,
  type StoreUnavailable
} from "../eventlog/EventStore.ts"
import { type Incarnation, Runner } from "../actors/Runner.ts"
import { Shutdown } from "../actors/Shutdown.ts"
import { isDurable } from "../eventlog/Database.ts"
import { makeTerminalWaiters } from "./TerminalWaiters.ts"
import { ExecutionPermits } from "./ExecutionPermits.ts"
import { AttachmentFiles } from "./ExecutionPorts.ts"
import { Adapters } from "../providers/Adapter.ts"
import { countOutcome, type DispatchPlan, type Entry, makeRuns, newEntry, toNew } from "./ExecutionRun.ts"

/** How long before a stop's cut the requests still waiting for an execution are answered. */
const ANSWER_BEFORE_CUT_MS = 1_000

export { capOf, type DispatchPlan } from "./ExecutionRun.ts"

export interface NewExecution {
  readonly request: Omit<ExecutionRequested, "type">
  readonly plan: DispatchPlan
  /** Appends that must commit atomically with the request (the idempotency claim). */
  readonly alongside: ReadonlyArray<AppendRequest>
}

export interface ExecutionActorShape {
  /** Records the request (with `alongside`), then dispatches in the background. */
  readonly execute: (execution: NewExecution) => Effect.Effect<ExecutionRecord, ConcurrencyConflict | LaneFull | StoreUnavailable>
  /** Cancels; a cancelled execution is returned unchanged; succeeded or failed is a StateConflict. */
  readonly cancel: (executionId: string) => Effect.Effect<ExecutionRecord, NotFound | StateConflict | StoreUnavailable>
  /** Marks an accepted idempotent replay (once); returns the record. */
  readonly markReplayed: (executionId: string) => Effect.Effect<ExecutionRecord, NotFound | StoreUnavailable>
  readonly get: (executionId: string) => Effect.Effect<ExecutionRecord | undefined, StoreUnavailable>
  /** The terminal record, or the current one when `timeoutMs` passes first. */
  readonly awaitTerminal: (executionId: string, timeoutMs: number) => Effect.Effect<ExecutionRecord | undefined, StoreUnavailable>
  /**
   * Recovery of the executions among `running` and `pending` whose owner is not `alive` (never
   * this process's), and of the requests this process gave up recording that were recorded all
   * the same (see `unsure` below): running ones fail with `execution_interrupted`, then
   * `beforeResume` runs (stale permits), then pending ones are dispatched here, oldest first.
   * Answers how many of each it took over.
   */
  readonly recover: (options: {
    readonly running: ReadonlyArray<string>
    readonly pending: ReadonlyArray<string>
    /** The owners alive now; asked after the executions' owners were read. */
    readonly alive: Effect.Effect<ReadonlySet<string>, StoreUnavailable>
    readonly beforeResume: Effect.Effect<void, StoreUnavailable>
    readonly resumePlan: (request: ExecutionRequested) => Effect.Effect<DispatchPlan, string>
  }) => Effect.Effect<{ readonly interrupted: number; readonly resumed: number }, StoreUnavailable>
}

/** How many recovery scans (ExecutionRecovery.ts, 5 s apart) look for a request that may yet be recorded: ten minutes. */
const UNSURE_SCANS = 120
/** How many such requests are remembered at most. */
const UNSURE_MAX = 10_000

export class ExecutionActor extends Context.Service<ExecutionActor, ExecutionActorShape>()("app/infra/ExecutionActor") {}

/** The execution stream's decider, for the command handler. */
const executionDecider: Decider<ExecutionCommand, ExecutionEvent, ExecutionState, StateConflict> = {
  streamType: STREAM_TYPE,
  codec: executionCodec,
  initialState: undefined,
  evolve,
  decide
}

/** The state of a stream read from the log. */
const foldRecorded = (events: ReadonlyArray<RecordedEvent>): ExecutionState =>
  events.reduce<ExecutionState>((state, event) => evolve(state, executionCodec.decode(event)), undefined)

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const runner = yield* Runner
  const permits = yield* ExecutionPermits
  const adapters = yield* Adapters
  const files = yield* AttachmentFiles
  const scope = yield* Effect.scope
  const durable = yield* isDurable
  /**
   * Live executions cached by the incarnation that folded them. When the incarnation ends (its
   * runner lease was lost, Runner.ts) its dispatches have stopped and the cache is dropped: the
   * next command refolds from the log under the new incarnation.
   */
  let cachedBy: Incarnation | undefined
  let entries = new Map<string, Entry>()
  /** Where this incarnation's dispatches run: closed when it ends, or when the actor is shut down. */
  let dispatches: Scope.Closeable | undefined
  const within = (incarnation: Incarnation) => {
    if (cachedBy === incarnation && dispatches !== undefined) return Effect.succeed({ incarnation, dispatches })
    return Effect.map(incarnation.actorScope(scope), (opened) => {
      if (cachedBy !== incarnation) {
        cachedBy = incarnation
        entries = new Map()
        dispatches = opened
      }
      return { incarnation, dispatches: dispatches ?? opened }
    })
  }
  const current = Effect.flatMap(runner.current, within)
  /** A request's: 503 at once rather than held while the lease is lost (Runner.ts). */
  const registered = Effect.flatMap(runner.registered, within)
  /**
   * Requests whose append failed here (the store out of reach, or out of time): their callers
   * were answered 503, but a commit the store's bound gave up on may still be applied when the
   * database answers again (PgBoundedClient.ts), leaving an execution owned by this live process
   * that nothing runs and no recovery of a peer's would touch. Each recovery scan reads them:
   * one recorded is taken over like a stopped peer's (pending: run here; running: interrupted),
   * one absent is looked for again, for UNSURE_SCANS scans.
   */
  const unsure = new Map<string, number>()
  const remember = (executionId: string) => {
    if (!durable) return
    // Bounded through a long outage under load: the oldest are let go first.
    if (unsure.size >= UNSURE_MAX) unsure.delete(unsure.keys().next().value!)
    unsure.set(executionId, UNSURE_SCANS)
  }

  /** Callers waiting for terminal records (sync requests, MCP tasks), here or recorded elsewhere. */
  const waiters = makeTerminalWaiters({
    store,
    durable,
    scope,
    readTerminal: (executionId) =>
      Effect.map(store.readStream(streamId(executionId)), (events) => {
        const state = foldRecorded(events)
        return state !== undefined && isTerminalState(state) ? state.record : undefined
      }),
    dispatchedHere: (executionId) => entries.get(executionId)?.fiber !== undefined
  })

  /** The cached owner of a live execution, or a fresh fold (terminal ones are not cached). */
  const entryFor = (executionId: string): Effect.Effect<Entry, StoreUnavailable> =>
    Effect.suspend(() => {
      const cached = entries.get(executionId)
      if (cached !== undefined) return Effect.succeed(cached)
      return Effect.map(store.readStream(streamId(executionId)), (events) => {
        const entry = newEntry(foldRecorded(events), events.length)
        if (entry.state === undefined || isTerminalState(entry.state)) return entry
        const raced = entries.get(executionId)
        if (raced !== undefined) return raced
        entries.set(executionId, entry)
        return entry
      })
    })

  const settle = (executionId: string, entry: Entry, events: ReadonlyArray<ExecutionEvent>) => {
    // An outcome is counted when it is reached, not again for a replay or a repeated cancel.
    const wasTerminal = entry.state !== undefined && isTerminalState(entry.state)
    entry.state = events.reduce(evolve, entry.state)
    entry.version += events.length
    if (entry.state !== undefined && isTerminalState(entry.state)) {
      if (!wasTerminal) countOutcome(entry.state.record)
      waiters.settle(executionId, entry.state.record)
      if (entries.get(executionId) === entry) entries.delete(executionId)
    }
  }

  /**
   * One command under the id's lock: the handler decides on the cached state, and on a lost
   * version race refolds from the log and decides again; the cache takes the result.
   */
  const mutate = (
    executionId: string,
    command: (now: number) => ExecutionCommand,
    after: (entry: Entry, events: ReadonlyArray<ExecutionEvent>) => Effect.Effect<void> = () => Effect.void
  ): Effect.Effect<ExecutionRecord, NotFound | StateConflict | StoreUnavailable> =>
    Effect.flatMap(entryFor(executionId), (entry) =>
      entry.lock.withPermits(1)(Effect.uninterruptible(Effect.gen(function*() {
        if (entry.state === undefined) return yield* new NotFound({ message: `Execution ${executionId} was not found.` })
        const now = yield* Clock.currentTimeMillis
        const handled = yield* handleCommand(store, executionDecider, streamId(executionId), command(now), {
          known: { state: entry.state, version: entry.version }
        })
        entry.state = handled.before
        entry.version = handled.version
        settle(executionId, entry, handled.events)
        yield* after(entry, handled.events)
        return handled.after?.record ?? (yield* new NotFound({ message: `Execution ${executionId} was not found.` }))
      }).pipe(
        // A refusal may come from a fresh fold after a lost race: the cached state is stale then,
        // and the next command or read folds the log again.
        Effect.tapErrorTag("StateConflict", () =>
          Effect.sync(() => {
            if (entries.get(executionId) === entry) entries.delete(executionId)
          }))
      ))))

  const shutdown = yield* Shutdown
  const runs = makeRuns({ store, permits, adapters, files, scope, mutate, entryFor, stopping: shutdown.stopping })

  /**
   * A clean stop (SIGTERM) lets the executions dispatched here finish, within the stop's deadline
   * (actors/Shutdown.ts): only what is still running then is interrupted, and a peer or the next
   * start fails it with `execution_interrupted`. What waits for a permit does not start once the
   * stop has begun (ExecutionRun.ts): it stays pending for the next process, and is not waited for;
   * a request waiting for it is answered at once.
   */
  const awaited = new Set<Fiber.Fiber<unknown, unknown>>()
  const awaitRunning = Effect.gen(function*() {
    while (true) {
      const running = [...entries.values()].flatMap((entry) =>
        entry.fiber === undefined || !entry.dispatching || awaited.has(entry.fiber) ? [] : [entry.fiber]
      )
      if (running.length === 0) return
      for (const fiber of running) awaited.add(fiber)
      yield* Effect.forEach(running, Fiber.await, { concurrency: "unbounded", discard: true })
    }
  })
  // What still runs a moment before the stop cuts it: its waiting requests are answered first,
  // with the record as it is (202 and its Location), rather than closed with no answer.
  // A second signal (Shutdown.hurry) cuts the stop at once: they are answered then.
  const answerBeforeCut = Effect.suspend(() => Effect.sleep(Math.max(0, shutdown.remainingMs() - ANSWER_BEFORE_CUT_MS))).pipe(
    Effect.raceFirst(shutdown.whenHurried),
    Effect.andThen(Effect.sync(() => waiters.releaseAll(() => false))),
    Effect.andThen(Effect.never)
  )
  yield* shutdown.onStop("executions", Effect.gen(function*() {
    // A request waiting for one that will not start here now (a sync call of an async-by-nature
    // tool behind the toolkit's cap) is answered with it as it is: 202, pending, and its Location.
    // So is one waiting for an execution another process runs: the stop does not wait for those.
    waiters.releaseAll((executionId) => entries.get(executionId)?.dispatching === true)
    yield* Effect.raceFirst(awaitRunning, answerBeforeCut)
  }))

  /**
   * The live executions among `ids` that another process owns, read afresh (a cached entry of
   * another process's execution may be stale); one this process dispatches is never among them.
   */
  const ownedElsewhere = (self: string, ids: ReadonlyArray<string>) =>
    Effect.map(
      Effect.forEach(ids, (executionId) =>
        entries.get(executionId)?.fiber !== undefined
          ? Effect.succeed(undefined)
          : Effect.map(store.readStream(streamId(executionId)), (events) => {
            const state = foldRecorded(events)
            return state === undefined || isTerminalState(state) || state.owner === self
              ? undefined
              : { executionId, owner: state.owner }
          }), { concurrency: 16 }),
      (found) => found.filter((f) => f !== undefined)
    )

  /**
   * The `unsure` requests recorded after all, owned by this incarnation and not dispatched here,
   * by status. One found otherwise (ended, another's, running here), or looked for UNSURE_SCANS
   * times, is forgotten; an orphan is forgotten once recovery has taken it over.
   */
  const unsureOrphans = (self: string) =>
    Effect.map(
      Effect.forEach([...unsure.keys()], (executionId) =>
        Effect.map(store.readStream(streamId(executionId)), (events) => {
          if (events.length === 0) {
            const left = (unsure.get(executionId) ?? 1) - 1
            if (left <= 0) unsure.delete(executionId)
            else unsure.set(executionId, left)
            return undefined
          }
          const state = foldRecorded(events)
          if (state === undefined || isTerminalState(state) || state.owner !== self || entries.get(executionId)?.fiber !== undefined) {
            unsure.delete(executionId)
            return undefined
          }
          return { executionId, owner: state.owner, status: state.record.status }
        }), { concurrency: 16 }),
      (found) => {
        const orphans = found.filter((f) => f !== undefined)
        return { running: orphans.filter((o) => o.status === "running"), pending: orphans.filter((o) => o.status === "pending") }
      }
    )

  const actor: ExecutionActorShape = {
    execute: Effect.fnUntraced(function*({ request, plan, alongside }) {
      const owner = yield* registered
      const incarnation = owner.incarnation
      const now = yield* Clock.currentTimeMillis
      const requested = decide({ _tag: "RequestExecution", request: { ...request, owner: incarnation.id } }, undefined)
      if (requested instanceof StateConflict) return yield* Effect.die(requested)
      let state = requested.reduce(evolve, undefined as ExecutionState)
      let events = requested
      if (plan.permitHeld) {
        const started = decide({ _tag: "StartDispatch", now, owner: incarnation.id }, state)
        if (started instanceof StateConflict) return yield* Effect.die(started)
        state = started.reduce(evolve, state)
        events = [...events, ...started]
        if (plan.tool.pure) return yield* runs.runPure(request, plan, alongside, state, events)
      }
      yield* store.append([
        ...alongside,
        { streamId: streamId(request.executionId), streamType: STREAM_TYPE, expectedVersion: 0, events: events.map(toNew) }
      ]).pipe(Effect.tapErrorTag("StoreUnavailable", () => Effect.sync(() => remember(request.executionId))))
      const entry = newEntry(state, events.length)
      entries.set(request.executionId, entry)
      // Sync with its permit: dispatched at once, so the record may already be terminal. Async
      // answers the record as requested (pending) and dispatches on the scheduler's next turn.
      yield* runs.fork(owner, request.executionId, entry, plan, plan.permitHeld)
      const record = plan.permitHeld ? entry.state?.record : state?.record
      return record ?? (yield* Effect.die(new Error("a request always makes a record")))
    }),

    cancel: (executionId) =>
      mutate(executionId, (now) => ({ _tag: "CancelExecution", now }), (entry, events) =>
        events.length === 0 ? Effect.void : runs.stop(entry)),

    markReplayed: (executionId) =>
      mutate(executionId, (now) => ({ _tag: "MarkReplayed", now })).pipe(
        Effect.catchTag("StateConflict", (e) => Effect.die(e))
      ),

    get: (executionId) => Effect.map(entryFor(executionId), (entry) => entry.state?.record),

    awaitTerminal: (executionId, timeoutMs) =>
      Effect.flatMap(entryFor(executionId), (entry) => {
        if (entry.state === undefined || isTerminalState(entry.state)) return Effect.succeed(entry.state?.record)
        // Once stopping, one not already under way here will not start here (ExecutionRun.ts):
        // its caller is answered with it as it is, as the stop answered those waiting before.
        // So is any caller once the stop is about to cut what still runs.
        if (shutdown.stopping() && (!entry.dispatching || shutdown.remainingMs() <= ANSWER_BEFORE_CUT_MS)) return Effect.succeed(entry.state.record)
        return waiters.wait(executionId, timeoutMs, () => entries.get(executionId)?.state?.record ?? entry.state?.record)
      }),

    recover: ({ running, pending, alive, beforeResume, resumePlan }) =>
      Effect.gen(function*() {
        // Owners are read first, then liveness: an owner read and then found without its lease is
        // gone for good (an incarnation that ends is never live again; the next takes a new id).
        const self = yield* current
        const incarnation = self.incarnation
        const candidates = {
          running: yield* ownedElsewhere(incarnation.id, running),
          pending: yield* ownedElsewhere(incarnation.id, pending)
        }
        const orphans = yield* unsureOrphans(incarnation.id)
        const living = yield* alive
        // Events from before owners existed name none: whoever recovers first takes them.
        const gone = (found: { readonly owner: string | undefined }) => found.owner === undefined || !living.has(found.owner)
        const lost = [...candidates.running.filter(gone), ...orphans.running]
        // Concurrently, so the appends share group commits and start-up stays short.
        yield* Effect.forEach(lost, ({ executionId, owner }) =>
          mutate(executionId, (now) => ({ _tag: "InterruptExecution", now, owner })).pipe(
            Effect.catchTags({ StateConflict: () => Effect.void, NotFound: () => Effect.void })
          ), { concurrency: 64, discard: true })
        yield* beforeResume
        let resumed = 0
        for (const { executionId } of [...candidates.pending.filter(gone), ...orphans.pending]) {
          const entry = yield* entryFor(executionId)
          if (entry.state?.record.status !== "pending" || entry.fiber !== undefined) continue
          resumed++
          const plan = yield* Effect.result(resumePlan(entry.state.request))
          if (plan._tag === "Success") {
            yield* runs.fork(self, executionId, entry, plan.success)
            continue
          }
          const error = normalized("provider_error", `The execution could not be resumed: ${plan.failure}`)
          yield* mutate(executionId, (now) => ({ _tag: "FailExecution", now, error })).pipe(
            Effect.catchTags({ StateConflict: () => Effect.void, NotFound: () => Effect.void })
          )
        }
        // Taken over: a scan that failed before this point finds them again.
        for (const { executionId } of [...orphans.running, ...orphans.pending]) unsure.delete(executionId)
        return { interrupted: lost.length, resumed }
      })
  }
  return actor
})

export const layer = Layer.effect(ExecutionActor, make)
