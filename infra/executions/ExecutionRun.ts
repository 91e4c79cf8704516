/**
 * How the execution actor (ExecutionActor.ts) runs an execution once it is recorded: take the
 * toolkit permit, record the start, call the tool's adapter (ExecutionDispatch.ts), record the
 * outcome, free the permit; or, for a pure tool run sync, run it first and record its whole run in
 * one commit (`runPure`). Cancellation interrupts the adapter's fiber and frees the permit.
 *
 * The actor owns the cache of live executions (`Entry`) and their commands (`mutate`); this
 * module only drives runs through them.
 */
import { Clock, type Context, Effect, Fiber, type Redacted, type Scope, Semaphore } from "effect"
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
  STREAM_TYPE,
  streamId
} from "../../domain/executions/Execution.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { type NotFound, StateConflict } from "../../domain/Errors.ts"
import type { Incarnation } from "../actors/Runner.ts"
import { backoff } from "../Backoff.ts"
import type { AppendRequest, EventStoreShape, NewEvent, StoreUnavailable } from "../eventlog/EventStore.ts"
import { newId } from "../Ids.ts"
import { recordExecution } from "../observability/Metrics.ts"
import { type SpanOutcome, spanned } from "../observability/Tracing.ts"
import type { Adapters } from "../providers/Adapter.ts"
import { type DispatchOutcome, runAdapter } from "./ExecutionDispatch.ts"
import type { ExecutionPermitsShape, PermitKey } from "./ExecutionPermits.ts"
import type { AttachmentFiles } from "./ExecutionPorts.ts"

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

/** A live execution as the actor caches it. */
export interface Entry {
  readonly lock: Semaphore.Semaphore
  state: ExecutionState
  version: number
  fiber: Fiber.Fiber<void, never> | undefined
  /**
   * Whether its dispatch went past the permit into the tool (set before the start is recorded):
   * what a clean stop waits for. A dispatch still waiting for a permit is not.
   */
  dispatching: boolean
  /** Frees the toolkit permit once (cancel frees it before the dispatch fiber has ended). */
  releasePermit: Effect.Effect<void>
}

export const newEntry = (state: ExecutionState, version: number): Entry => ({
  lock: Semaphore.makeUnsafe(1),
  state,
  version,
  fiber: undefined,
  dispatching: false,
  releasePermit: Effect.void
})

/** The incarnation commands run under, and the scope its dispatches run in. */
export interface Owner {
  readonly incarnation: Incarnation
  readonly dispatches: Scope.Closeable
}

/** One dispatch of an execution and where its toolkit permit stands. */
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

/** Counts a terminal record by tool and outcome: its status, or its error code when it failed. */
export const countOutcome = (record: ExecutionRecord): void =>
  recordExecution(record.tool, record.status === "failed" ? record.error.code : record.status)

export const toNew = (event: ExecutionEvent): NewEvent => executionCodec.encode(event, newId("evt"))

/** What a tool run's span says of it: its outcome, and an error status when it failed. */
const spanOutcome = (outcome: DispatchOutcome): SpanOutcome =>
  outcome._tag === "Success"
    ? { attributes: { "execution.outcome": "succeeded" } }
    : {
      attributes: { "execution.outcome": "failed", "error.type": outcome.error.code },
      error: `${outcome.error.code}: ${outcome.error.message}`
    }

const outcomeCommand = (outcome: DispatchOutcome, now: number): ExecutionCommand =>
  outcome._tag === "Success"
    ? { _tag: "CompleteExecution", now, output: outcome.output }
    : { _tag: "FailExecution", now, error: outcome.error }

/** How a known outcome, or the start of a dispatch, is offered to a failing store again. */
const STORE_RETRY = backoff("30 seconds")
const whileStoreFails = { schedule: STORE_RETRY, while: (e: { readonly _tag: string }) => e._tag === "StoreUnavailable" }

/** The toolkit's concurrency cap per project, when its manifest declares one. */
export const capOf = (tool: ToolDefinition): number | undefined =>
  findToolkit(tool.toolkit)?.limits.maxConcurrentExecutionsPerProject

export interface RunDependencies {
  readonly store: EventStoreShape
  readonly permits: ExecutionPermitsShape
  readonly adapters: Context.Service.Shape<typeof Adapters>
  readonly files: Context.Service.Shape<typeof AttachmentFiles>
  /** The actor's scope: cancellations' interrupts are forked in it. */
  readonly scope: Scope.Scope
  /** The actor's command, under the execution's lock. */
  readonly mutate: (
    executionId: string,
    command: (now: number) => ExecutionCommand
  ) => Effect.Effect<ExecutionRecord, NotFound | StateConflict | StoreUnavailable>
  /** The cached live execution, or a fresh fold. */
  readonly entryFor: (executionId: string) => Effect.Effect<Entry, StoreUnavailable>
  /** True once the process is stopping (actors/Shutdown.ts): no pending execution starts then. */
  readonly stopping: () => boolean
}

export const makeRuns = ({ store, permits, adapters, files, scope, mutate, entryFor, stopping }: RunDependencies) => {
  const runTool = (request: Pick<ExecutionRequested, "executionId" | "projectId" | "userId" | "attachments">, plan: DispatchPlan) =>
    runAdapter(adapters.get(plan.tool.name), plan, {
      executionId: request.executionId,
      projectId: request.projectId,
      userId: request.userId,
      credentials: plan.credentials,
      files: files.forExecution({ projectId: request.projectId, executionId: request.executionId, attachments: request.attachments ?? [] })
    }).pipe(spanned("execution", { "execution.id": request.executionId, "execution.tool": plan.tool.name, "project.id": request.projectId }, "internal", spanOutcome))

  /**
   * A pure tool run sync with its permit (like a workflow engine's local activity): the tool runs
   * first, then its request, start and outcome commit together, one commit instead of two. A
   * process that stops before that commit leaves nothing recorded, and nothing outside it
   * changed; its caller had no answer and may ask again. With `capInCommit` the commit itself
   * checks the cap (no permit before, none to release after) and a full lane fails with LaneFull.
   */
  const runPure = Effect.fnUntraced(function*(
    request: Omit<ExecutionRequested, "type">,
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
    if (state !== undefined) countOutcome(state.record)
    return state?.record ?? (yield* Effect.die(new Error("an outcome always makes a record")))
  })

  /** The permit, then the start (unless already running), the adapter, and the outcome. */
  const runDispatch = Effect.fnUntraced(function*(run: Dispatching) {
    const { executionId, plan, request, key } = run
    let entry = run.entry
    if (run.cap !== undefined && run.permit === "none") {
      run.permit = "acquiring"
      yield* permits.acquire(key, run.cap).pipe(Effect.retry(whileStoreFails))
      run.permit = "held"
    }
    if (entry.state?.record.status === "pending") {
      // A stopping process starts nothing: the execution stays pending, and the next process
      // (or a peer) runs it. The permit goes back as the dispatch ends.
      if (stopping()) return
      entry.dispatching = true
      const started = yield* mutate(executionId, (now) => ({ _tag: "StartDispatch", now, owner: run.incarnation.id })).pipe(
        // A store that fails (a connection lost) delays the start; it must not leave it pending.
        Effect.retry(whileStoreFails),
        Effect.map(() => true),
        Effect.catchTag("StateConflict", () => Effect.succeed(false))
      )
      if (!started) {
        const now = yield* Effect.orElseSucceed(entryFor(executionId), () => undefined)
        const running = now?.state?.record.status === "running"
        if (now === undefined || !running || now.state?.owner !== run.incarnation.id) {
          // Started elsewhere first (two processes resumed it at once): the permit is the
          // execution's, and its dispatch there holds it until the outcome. Releasing it here
          // would free a permit still in use.
          if (running) run.permit = "released"
          return
        }
        // Started by this very dispatch: a try the store gave up on (its commit outlived the
        // store's bound, PgBoundedClient.ts) was applied after all, and the retry met it. Only
        // one dispatch of an execution runs in an incarnation, so the start is this one's: the
        // tool runs, from the entry folded afresh (the stale one left the cache with the refusal).
        now.fiber = entry.fiber
        now.releasePermit = entry.releasePermit
        entry = now
      }
    } else if (entry.state?.record.status !== "running") return
    entry.dispatching = true
    const outcome = yield* runTool(request, plan)
    yield* mutate(executionId, (now) => outcomeCommand(outcome, now)).pipe(
      Effect.catchTag("StateConflict", () => Effect.void),
      // The outcome is known: a store outage delays its record, it does not lose it.
      Effect.retry(whileStoreFails)
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

  return {
    runPure,
    /**
     * Runs the dispatch in the owner's scope. `startImmediately` runs it in the caller's turn up to
     * its first wait: a fast adapter (demo, a cached answer) has then finished before `fork`
     * returns, and a sync request answers without a scheduled fiber, a listener and a timer.
     */
    fork: (owner: Owner, executionId: string, entry: Entry, plan: DispatchPlan, startImmediately = false) =>
      Effect.map(Effect.forkIn(dispatch(owner.incarnation, executionId, entry, plan), owner.dispatches, { startImmediately }), (fiber) => {
        entry.fiber = fiber
      }),
    /** After a cancel: the adapter's fiber is interrupted (best effort, not awaited), the permit freed. */
    stop: Effect.fnUntraced(function*(entry: Entry) {
      const fiber = entry.fiber
      if (fiber !== undefined) yield* Effect.forkIn(Fiber.interrupt(fiber), scope)
      yield* entry.releasePermit
    })
  }
}
