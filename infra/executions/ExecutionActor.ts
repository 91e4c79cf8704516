/**
 * The Execution actor, in process: one owner per execution id. It loads state by folding the
 * stream `execution-<id>`, decides, appends with the expected version, then acts (dispatches
 * through the tool's adapter, with the tool's timeout, holding the toolkit permit). A pure tool
 * run sync acts first and records its whole run in one append (`runPure`).
 *
 * Ownership: commands for one id are serialized by a per-id semaphore, and every append is
 * checked against the stream version, so a stale cache or a second owner loses with a
 * `ConcurrencyConflict` and retries on a fresh fold. The service interface (`execute`,
 * `cancel`, `markReplayed`, `get`, `awaitTerminal`, `recover`) is what a cluster Entity would
 * host later without changing callers.
 */
import { Clock, Context, Effect, Fiber, Layer, type Redacted, type Scope, Semaphore } from "effect"
import type { ToolDefinition } from "../../domain/catalog/Catalog.ts"
import { findToolkit } from "../../domain/catalog/index.ts"
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
import {
  type AppendRequest,
  type ConcurrencyConflict,
  EventStore,
  type LaneFull,
  type NewEvent,
  type RecordedEvent,
  type StoreUnavailable
} from "../eventlog/EventStore.ts"
import { type Incarnation, Runner } from "../actors/Runner.ts"
import { backoff } from "../Backoff.ts"
import { isDurable } from "../eventlog/Database.ts"
import { makeTerminalWaiters } from "./TerminalWaiters.ts"
import { ExecutionPermits, type PermitKey } from "./ExecutionPermits.ts"
import { newId } from "../Ids.ts"
import { type DispatchOutcome, runAdapter } from "./ExecutionDispatch.ts"
import { AttachmentFiles } from "./ExecutionPorts.ts"
import { Adapters } from "../providers/Adapter.ts"

export interface DispatchPlan {
  readonly tool: ToolDefinition
  /** Decoded by the tool's input schema. */
  readonly input: unknown
  readonly credentials: Redacted.Redacted<Readonly<Record<string, string>>> | undefined
  /**
   * Sync dispatch that may start at once (the toolkit permit is held, or the toolkit has no
   * cap): the request and the start commit together, halving the commits of a sync execution.
   */
  readonly permitHeld: boolean
  /**
   * A pure tool's sync run whose cap its own commit checks (`EventStore.appendWithinCap`): no
   * permit is held before it, none released after, and a full lane refuses it with `LaneFull`.
   */
  readonly capInCommit?: boolean | undefined
}

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
   * this process's): running ones fail with `execution_interrupted`, then `beforeResume` runs
   * (stale permits), then pending ones are dispatched here, oldest first. Answers how many of
   * each it took over.
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

export class ExecutionActor extends Context.Service<ExecutionActor, ExecutionActorShape>()("app/infra/ExecutionActor") {}

interface Entry {
  readonly lock: Semaphore.Semaphore
  state: ExecutionState
  version: number
  fiber: Fiber.Fiber<void, never> | undefined
  /** Frees the toolkit permit once (cancel frees it before the dispatch fiber has ended). */
  releasePermit: Effect.Effect<void>
}

/** One dispatch of an execution and where its toolkit permit stands. */
/** The incarnation commands run under, and the scope its dispatches run in. */
interface Owner {
  readonly incarnation: Incarnation
  readonly dispatches: Scope.Closeable
}

interface Dispatching {
  /** The incarnation that runs it: its scope holds the fiber, its id is the recorded owner. */
  readonly incarnation: Incarnation
  readonly executionId: string
  readonly entry: Entry
  readonly plan: DispatchPlan
  readonly request: ExecutionRequested
  readonly cap: number | undefined
  readonly key: PermitKey
  /** "acquiring" covers a grant that races an interruption: the final release frees it. */
  permit: "none" | "acquiring" | "held" | "released"
}

const toNew = (event: ExecutionEvent): NewEvent => executionCodec.encode(event, newId("evt"))

/** The state of a stream read from the log. */
const foldRecorded = (events: ReadonlyArray<RecordedEvent>): ExecutionState =>
  events.reduce<ExecutionState>((state, event) => evolve(state, executionCodec.decode(event)), undefined)

const outcomeCommand = (outcome: DispatchOutcome, now: number): ExecutionCommand =>
  outcome._tag === "Success"
    ? { _tag: "CompleteExecution", now, output: outcome.output }
    : { _tag: "FailExecution", now, error: outcome.error }

const MAX_CONFLICT_RETRIES = 8

/** How a known outcome, or the start of a dispatch, is offered to a failing store again. */
const STORE_RETRY = backoff("30 seconds")

/** The toolkit's concurrency cap per project, when its manifest declares one. */
export const capOf = (tool: ToolDefinition): number | undefined =>
  findToolkit(tool.toolkit)?.limits.maxConcurrentExecutionsPerProject

const newEntry = (state: ExecutionState, version: number): Entry => ({
  lock: Semaphore.makeUnsafe(1),
  state,
  version,
  fiber: undefined,
  releasePermit: Effect.void
})

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
  const current = Effect.flatMap(runner.current, (incarnation) => {
    if (cachedBy === incarnation && dispatches !== undefined) return Effect.succeed({ incarnation, dispatches })
    return Effect.map(incarnation.actorScope(scope), (opened) => {
      if (cachedBy !== incarnation) {
        cachedBy = incarnation
        entries = new Map()
        dispatches = opened
      }
      return { incarnation, dispatches: dispatches ?? opened }
    })
  })
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
    entry.state = events.reduce(evolve, entry.state)
    entry.version += events.length
    if (entry.state !== undefined && isTerminalState(entry.state)) {
      waiters.settle(executionId, entry.state.record)
      if (entries.get(executionId) === entry) entries.delete(executionId)
    }
  }

  /** One decision and its append, under the entry's lock. */
  const decideAndAppend = Effect.fnUntraced(function*(
    executionId: string,
    entry: Entry,
    command: (now: number) => ExecutionCommand,
    after: (entry: Entry, events: ReadonlyArray<ExecutionEvent>) => Effect.Effect<void>
  ): Effect.fn.Return<ExecutionRecord, NotFound | StateConflict | ConcurrencyConflict | StoreUnavailable> {
    if (entry.state === undefined) return yield* new NotFound({ message: `Execution ${executionId} was not found.` })
    const now = yield* Clock.currentTimeMillis
    const decision = decide(command(now), entry.state)
    if (decision instanceof StateConflict) return yield* decision
    if (decision.length > 0) {
      yield* store.append([{
        streamId: streamId(executionId),
        streamType: STREAM_TYPE,
        expectedVersion: entry.version,
        events: decision.map(toNew)
      }])
      settle(executionId, entry, decision)
    }
    yield* after(entry, decision)
    return entry.state.record
  })

  /** Decide and append under the id's lock; a lost version race refolds and tries again. */
  const mutate = (
    executionId: string,
    command: (now: number) => ExecutionCommand,
    after: (entry: Entry, events: ReadonlyArray<ExecutionEvent>) => Effect.Effect<void> = () => Effect.void
  ): Effect.Effect<ExecutionRecord, NotFound | StateConflict | StoreUnavailable> => {
    const attempt = (left: number): Effect.Effect<ExecutionRecord, NotFound | StateConflict | StoreUnavailable> =>
      Effect.flatMap(entryFor(executionId), (entry) =>
        entry.lock.withPermits(1)(Effect.uninterruptible(decideAndAppend(executionId, entry, command, after))).pipe(
          Effect.catchTag("ConcurrencyConflict", (conflict) => {
            if (entries.get(executionId) === entry) entries.delete(executionId)
            return left > 0 ? attempt(left - 1) : Effect.die(conflict)
          })
        ))
    return attempt(MAX_CONFLICT_RETRIES)
  }

  const runTool = (request: Pick<ExecutionRequested, "executionId" | "projectId" | "userId" | "attachments">, plan: DispatchPlan) =>
    runAdapter(adapters.get(plan.tool.name), plan, {
      executionId: request.executionId,
      projectId: request.projectId,
      userId: request.userId,
      credentials: plan.credentials,
      files: files.forExecution({ projectId: request.projectId, executionId: request.executionId, attachments: request.attachments ?? [] })
    })

  /**
   * A pure tool run sync with its permit (like a workflow engine's local activity): the tool runs
   * first, then its request, start and outcome commit together, one commit instead of two. A
   * process that stops before that commit leaves nothing recorded, and nothing outside it
   * changed; its caller had no answer and may ask again. With `capInCommit` the commit itself
   * checks the cap (no permit before, none to release after) and a full lane fails with LaneFull.
   */
  const runPure = Effect.fnUntraced(function*(
    request: NewExecution["request"],
    plan: DispatchPlan,
    alongside: ReadonlyArray<AppendRequest>,
    started: ExecutionState,
    events: ReadonlyArray<ExecutionEvent>
  ) {
    const outcome = yield* runTool(request, plan)
    const finished = decide(outcomeCommand(outcome, yield* Clock.currentTimeMillis), started)
    if (finished instanceof StateConflict) return yield* Effect.die(finished)
    const requests: ReadonlyArray<AppendRequest> = [
      ...alongside,
      { streamId: streamId(request.executionId), streamType: STREAM_TYPE, expectedVersion: 0, events: [...events, ...finished].map(toNew) }
    ]
    const cap = capOf(plan.tool)
    if (plan.capInCommit === true && cap !== undefined && store.appendWithinCap !== undefined) {
      yield* store.appendWithinCap(requests, { projectId: request.projectId, toolkit: plan.tool.toolkit, cap })
    } else {
      yield* store.append(requests)
      if (cap !== undefined) yield* permits.release({ projectId: request.projectId, toolkit: plan.tool.toolkit, executionId: request.executionId })
    }
    const state = finished.reduce(evolve, started)
    return state?.record ?? (yield* Effect.die(new Error("an outcome always makes a record")))
  })

  /** The permit, then the start (unless already running), the adapter, and the outcome. */
  const runDispatch = Effect.fnUntraced(function*(run: Dispatching) {
    const { executionId, entry, plan, request, key } = run
    if (run.cap !== undefined && run.permit === "none") {
      run.permit = "acquiring"
      yield* permits.acquire(key, run.cap).pipe(Effect.retry({ schedule: STORE_RETRY, while: (e) => e._tag === "StoreUnavailable" }))
      run.permit = "held"
    }
    if (entry.state?.record.status === "pending") {
      const started = yield* mutate(executionId, (now) => ({ _tag: "StartDispatch", now, owner: run.incarnation.id })).pipe(
        // A store that fails (a connection lost) delays the start; it must not leave it pending.
        Effect.retry({ schedule: STORE_RETRY, while: (e) => e._tag === "StoreUnavailable" }),
        Effect.map(() => true),
        Effect.catchTag("StateConflict", () => Effect.succeed(false))
      )
      if (!started) {
        // Started elsewhere first (two processes resumed it at once): the permit is the
        // execution's, and its dispatch there holds it until the outcome. Releasing it here
        // would free a permit still in use.
        const now = yield* Effect.orElseSucceed(entryFor(executionId), () => undefined)
        if (now?.state?.record.status === "running" && now.state.owner !== run.incarnation.id) run.permit = "released"
        return
      }
    } else if (entry.state?.record.status !== "running") return
    const outcome = yield* runTool(request, plan)
    yield* mutate(executionId, (now) => outcomeCommand(outcome, now)).pipe(
      Effect.catchTag("StateConflict", () => Effect.void),
      // The outcome is known: a store outage delays its record, it does not lose it.
      Effect.retry({ schedule: STORE_RETRY, while: (e) => e._tag === "StoreUnavailable" })
    )
    // Freed in this turn, before a caller answered with the outcome can send another request.
    // On Postgres the outcome's commit has already freed it (PgExecutionPermits.ts); this wakes
    // the waiters of this process.
    yield* entry.releasePermit
  })

  const dispatch = (incarnation: Incarnation, executionId: string, entry: Entry, plan: DispatchPlan): Effect.Effect<void> => {
    const request = entry.state?.request
    if (request === undefined) return Effect.void
    const cap = capOf(plan.tool)
    const run: Dispatching = {
      incarnation,
      executionId,
      entry,
      plan,
      request,
      cap,
      key: { projectId: request.projectId, toolkit: plan.tool.toolkit, executionId },
      permit: cap === undefined ? "released" : plan.permitHeld ? "held" : "none"
    }
    const releaseNow = Effect.suspend(() => {
      if (run.permit === "released") return Effect.void
      run.permit = "released"
      return permits.release(run.key)
    })
    entry.releasePermit = Effect.suspend(() => (run.permit === "held" ? releaseNow : Effect.void))
    return runDispatch(run).pipe(
      Effect.ensuring(releaseNow),
      Effect.catchCause((cause) => Effect.logError(`execution ${executionId}: dispatch stopped`, cause))
    )
  }

  /** After a cancel: the adapter's fiber is interrupted (best effort, not awaited), the permit freed. */
  const stopDispatch = Effect.fnUntraced(function*(entry: Entry) {
    const fiber = entry.fiber
    if (fiber !== undefined) yield* Effect.forkIn(Fiber.interrupt(fiber), scope)
    yield* entry.releasePermit
  })

  /**
   * `startImmediately` runs the dispatch in the caller's turn up to its first wait: a fast
   * adapter (demo, a cached answer) has then finished before `fork` returns, and a sync request
   * answers without a scheduled fiber, a listener and a timer.
   */
  const fork = (owner: Owner, executionId: string, entry: Entry, plan: DispatchPlan, startImmediately = false) =>
    Effect.map(Effect.forkIn(dispatch(owner.incarnation, executionId, entry, plan), owner.dispatches, { startImmediately }), (fiber) => {
      entry.fiber = fiber
    })

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

  const actor: ExecutionActorShape = {
    execute: Effect.fnUntraced(function*({ request, plan, alongside }) {
      const owner = yield* current
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
        if (plan.tool.pure) return yield* runPure(request, plan, alongside, state, events)
      }
      yield* store.append([
        ...alongside,
        { streamId: streamId(request.executionId), streamType: STREAM_TYPE, expectedVersion: 0, events: events.map(toNew) }
      ])
      const entry = newEntry(state, events.length)
      entries.set(request.executionId, entry)
      // Sync with its permit: dispatched at once, so the record may already be terminal. Async
      // answers the record as requested (pending) and dispatches on the scheduler's next turn.
      yield* fork(owner, request.executionId, entry, plan, plan.permitHeld)
      const record = plan.permitHeld ? entry.state?.record : state?.record
      return record ?? (yield* Effect.die(new Error("a request always makes a record")))
    }),

    cancel: (executionId) =>
      mutate(executionId, (now) => ({ _tag: "CancelExecution", now }), (entry, events) =>
        events.length === 0 ? Effect.void : stopDispatch(entry)),

    markReplayed: (executionId) =>
      mutate(executionId, (now) => ({ _tag: "MarkReplayed", now })).pipe(
        Effect.catchTag("StateConflict", (e) => Effect.die(e))
      ),

    get: (executionId) => Effect.map(entryFor(executionId), (entry) => entry.state?.record),

    awaitTerminal: (executionId, timeoutMs) =>
      Effect.flatMap(entryFor(executionId), (entry) => {
        if (entry.state === undefined || isTerminalState(entry.state)) return Effect.succeed(entry.state?.record)
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
        const living = yield* alive
        // Events from before owners existed name none: whoever recovers first takes them.
        const gone = (found: { readonly owner: string | undefined }) => found.owner === undefined || !living.has(found.owner)
        const lost = candidates.running.filter(gone)
        // Concurrently, so the appends share group commits and start-up stays short.
        yield* Effect.forEach(lost, ({ executionId, owner }) =>
          mutate(executionId, (now) => ({ _tag: "InterruptExecution", now, owner })).pipe(
            Effect.catchTags({ StateConflict: () => Effect.void, NotFound: () => Effect.void })
          ), { concurrency: 64, discard: true })
        yield* beforeResume
        let resumed = 0
        for (const { executionId } of candidates.pending.filter(gone)) {
          const entry = yield* entryFor(executionId)
          if (entry.state?.record.status !== "pending" || entry.fiber !== undefined) continue
          resumed++
          const plan = yield* Effect.result(resumePlan(entry.state.request))
          if (plan._tag === "Success") {
            yield* fork(self, executionId, entry, plan.success)
            continue
          }
          const error = normalized("provider_error", `The execution could not be resumed: ${plan.failure}`)
          yield* mutate(executionId, (now) => ({ _tag: "FailExecution", now, error })).pipe(
            Effect.catchTags({ StateConflict: () => Effect.void, NotFound: () => Effect.void })
          )
        }
        return { interrupted: lost.length, resumed }
      })
  }
  return actor
})

export const layer = Layer.effect(ExecutionActor, make)
