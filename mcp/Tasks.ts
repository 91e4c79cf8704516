/**
 * MCP tasks over executions (spec, "MCP task" and "MCP task status mapping"): a task's id is its
 * execution's id and its state is the execution record's, so tasks need no store of their own;
 * the log keeps which session owns a task and where its notifications go (TaskEvents.ts).
 *
 * A call refused before any execution existed (bad arguments, no user, a missing connection, a
 * rate limit) is still answered with a task when it asked for one (MCP: a receiver that accepts
 * a task-augmented request MUST answer a CreateTaskResult; input errors are task execution
 * errors): a task of its own id (`tsk_…`), failed from the start, whose result is the refusal.
 *
 * The process that creates a task watches its execution (LogFeed.ts) until it is terminal or
 * the task expires, and records each notification in the log for the session's GET stream: its
 * progress at queued, running and terminal when the call carried a progressToken, and the
 * terminal `notifications/tasks/status`; tasks/get and tasks/result answer from any process. A
 * process that stops cleanly reads each watched record once more as it closes, so an execution its
 * stop let finish still gets its terminal notifications; with a database, a process that starts
 * takes up the tasks still open in the log (`resumeWatches`, OpenTasks.ts), so one whose
 * execution the restart interrupted or ran later gets them too.
 */
import { Clock, Effect, FiberSet, Queue, type Scope } from "effect"
import type { ExecutionRecord, ExecutionStatus } from "../domain/executions/ExecutionRecord.ts"
import type { Executions } from "../infra/executions/Executions.ts"
import { type EventStore, type NewEvent, type RecordedEvent } from "../infra/eventlog/EventStore.ts"
import { isDurable } from "../infra/eventlog/Database.ts"
import { listAll, type ViewStore } from "../infra/eventlog/ViewStore.ts"
import type { NormalizedError } from "../domain/Errors.ts"
import { newId } from "../infra/Ids.ts"
import { MCP_TASK_STREAM_TYPE, type LogFeedShape, taskStreamId } from "./LogFeed.ts"
import type { McpSession } from "./McpSessions.ts"
import { RELATED_TASK_META } from "./ToolResults.ts"
import { OPEN_TASKS_TABLE, STATUS_METHOD, TASK_TTL_MAX_MS } from "./OpenTasks.ts"
import {
  decodeTaskEvent,
  encodeTaskEvent,
  type McpTaskCreated,
  type McpTaskEvent,
  type Notification,
  type ProgressToken
} from "./TaskEvents.ts"

export const TASK_TTL_MIN_MS = 60_000
export const TASK_TTL_DEFAULT_MS = 60 * 60 * 1000
export const POLL_INTERVAL_MS = 1000

export type TaskStatus = "working" | "completed" | "failed" | "cancelled"

export type Task = {
  readonly taskId: string
  readonly status: TaskStatus
  readonly createdAt: string
  readonly lastUpdatedAt: string
  readonly ttl: number
  readonly pollInterval: number
  readonly statusMessage?: string
}

export const clampTtl = (requested: number | undefined): number =>
  requested === undefined || !Number.isFinite(requested)
    ? TASK_TTL_DEFAULT_MS
    : Math.min(TASK_TTL_MAX_MS, Math.max(TASK_TTL_MIN_MS, Math.round(requested)))

export const taskStatus = (status: ExecutionStatus): TaskStatus => {
  switch (status) {
    case "pending":
    case "running":
      return "working"
    case "succeeded":
      return "completed"
    case "failed":
      return "failed"
    case "cancelled":
      return "cancelled"
  }
}

/** Where a status stands: queued 0, running 1, terminal 2 (also the progress value). */
export const stage = (status: ExecutionStatus): number => (status === "pending" ? 0 : status === "running" ? 1 : 2)

export const isTerminal = (record: ExecutionRecord): boolean => stage(record.status) === 2

export const taskOf = (binding: McpTaskCreated, record: ExecutionRecord): Task => ({
  taskId: record.executionId,
  status: taskStatus(record.status),
  createdAt: record.createdAt,
  lastUpdatedAt: record.completedAt ?? record.startedAt ?? record.createdAt,
  ttl: binding.ttlMs,
  pollInterval: POLL_INTERVAL_MS,
  ...(record.status === "failed" || record.status === "cancelled" ? { statusMessage: record.error.message } : {})
})

const STAGE_NAMES = ["queued", "running"] as const

/**
 * Progress of the execution behind `record`. A task's carries the related-task key (MCP
 * 2025-11-25, "Tasks": every notification related to a task MUST name it in `_meta`).
 */
export const progressNotification = (token: ProgressToken, record: ExecutionRecord, task?: { readonly taskId: string }): Notification => ({
  method: "notifications/progress",
  params: {
    progressToken: token,
    progress: stage(record.status),
    total: 2,
    message: STAGE_NAMES[stage(record.status)] ?? record.status,
    ...(task === undefined ? {} : { _meta: { [RELATED_TASK_META]: { taskId: task.taskId } } })
  }
})

/** A refused call's task: failed when it was made. */
export const refusedTaskOf = (binding: McpTaskCreated, refusal: NormalizedError): Task => {
  const at = new Date(binding.createdMs).toISOString()
  return {
    taskId: binding.executionId,
    status: "failed",
    createdAt: at,
    lastUpdatedAt: at,
    ttl: binding.ttlMs,
    pollInterval: POLL_INTERVAL_MS,
    statusMessage: refusal.message
  }
}

/**
 * The terminal status, for the session's GET stream. Without the related-task key: MCP
 * 2025-11-25 ("Task Notifications") says it SHOULD NOT carry it, the task id being in its params.
 */
const statusOf = (task: Task): Notification => ({ method: STATUS_METHOD, params: { ...task } })

export const statusNotification = (binding: McpTaskCreated, record: ExecutionRecord): Notification => statusOf(taskOf(binding, record))

/** What a change of the execution to `record` tells the session: progress, then terminal status. */
const notificationsFor = (binding: McpTaskCreated, record: ExecutionRecord): ReadonlyArray<Notification> => [
  ...(binding.progressToken !== undefined ? [progressNotification(binding.progressToken, record, { taskId: binding.executionId })] : []),
  ...(isTerminal(record) ? [statusNotification(binding, record)] : [])
]

/**
 * The stages an execution reached between `last` and `record`, in order. Seen only at its end, an
 * execution that had started still reports that it ran.
 */
export const stagesAfter = (last: ExecutionRecord, record: ExecutionRecord): ReadonlyArray<ExecutionRecord> => {
  if (stage(record.status) <= stage(last.status)) return []
  return stage(last.status) === 0 && isTerminal(record) && record.startedAt !== undefined
    ? [{ ...record, status: "running" }, record]
    : [record]
}

/**
 * Runs `onChange` for each later stage the execution reaches after `from`, up to its terminal
 * record: from the log as the follower reads it, after one read of the current record (the
 * watch is registered first, so a change is seen one way or the other). Each stage is reported
 * once and in order: a start seen only on the terminal record (`startedAt`) is reported before it.
 */
export const followStages = <E>(
  feed: LogFeedShape,
  executions: Executions["Service"],
  from: ExecutionRecord,
  onChange: (record: ExecutionRecord) => Effect.Effect<void, E>
): Effect.Effect<ExecutionRecord, E, Scope.Scope> =>
  Effect.gen(function*() {
    let last = from
    const queue = yield* feed.watchExecution(from.executionId)
    const advance = (record: ExecutionRecord) => Effect.andThen(Effect.sync(() => void (last = record)), onChange(record))
    const step = (record: ExecutionRecord): Effect.Effect<void, E> => Effect.forEach(stagesAfter(last, record), advance, { discard: true })
    const current = yield* Effect.option(executions.get(from.projectId, undefined, from.executionId))
    if (current._tag === "Some") yield* step(current.value)
    while (!isTerminal(last)) yield* step(yield* Queue.take(queue))
    return last
  })

const notified = (binding: McpTaskCreated, notifications: ReadonlyArray<Notification>): ReadonlyArray<McpTaskEvent> =>
  notifications.map((notification) => ({
    type: "McpTaskNotified",
    sessionId: binding.sessionId,
    executionId: binding.executionId,
    notification
  }))

export interface TasksShape {
  /** The session's task for an execution just created (or replayed); watches it when new. */
  readonly open: (
    session: McpSession,
    record: ExecutionRecord,
    ttl: number | undefined,
    progressToken: ProgressToken | undefined
  ) => Effect.Effect<Task>
  /** The failed task of a call refused before any execution existed. */
  readonly refuse: (session: McpSession, refusal: NormalizedError, ttl: number | undefined) => Effect.Effect<Task>
  /** The task as the session knows it, unless it is another session's, unknown or expired. */
  readonly find: (session: McpSession, taskId: string) => Effect.Effect<McpTaskCreated | undefined>
}

/** A task of `session` made now, under `taskId`, kept for `ttl` (clamped). */
const bindingOf = (
  session: McpSession,
  taskId: string,
  ttl: number | undefined,
  extra: Pick<McpTaskCreated, "progressToken" | "refusal">
): Effect.Effect<McpTaskCreated> =>
  Effect.map(Clock.currentTimeMillis, (now) => ({
    type: "McpTaskCreated",
    sessionId: session.sessionId,
    executionId: taskId,
    projectId: session.projectId,
    ttlMs: clampTtl(ttl),
    createdMs: now,
    ...extra
  }))

/** The stage a task's notifications in the log reached (0 queued, 1 running), or undefined once its status is there. */
const stageNotified = (events: ReadonlyArray<RecordedEvent>): number | undefined => {
  let reached = 0
  for (const event of events) {
    const decoded = decodeTaskEvent(event.data)
    if (decoded._tag === "None" || decoded.value.type !== "McpTaskNotified") continue
    const { method, params } = decoded.value.notification
    if (method === STATUS_METHOD) return undefined
    if (typeof params.progress === "number") reached = Math.max(reached, params.progress)
  }
  return reached
}

/** Rows of the open-tasks view read per page when a process takes them up. */
const OPEN_TASKS_PAGE = 200

export const makeTasks = Effect.fnUntraced(function*(
  store: EventStore["Service"],
  executions: Executions["Service"],
  feed: LogFeedShape,
  views: ViewStore["Service"]
) {
  const watchers = yield* FiberSet.make()
  /** What each watch has recorded so far: the stage it reached and its stream's next version. */
  const watched = new Map<string, { readonly binding: McpTaskCreated; last: ExecutionRecord; next: number }>()

  const append = (binding: McpTaskCreated, expectedVersion: number, events: ReadonlyArray<McpTaskEvent>) =>
    store.append([{
      streamId: taskStreamId(binding.sessionId, binding.executionId),
      streamType: MCP_TASK_STREAM_TYPE,
      expectedVersion,
      events: events.map((event): NewEvent => encodeTaskEvent(event, newId("evt")))
    }])

  /**
   * Records that the task's time to live ran out first, at `version` (a watch that recorded
   * more meanwhile makes it a conflict: that watch goes on), so it leaves the open-tasks view.
   */
  const expire = (binding: McpTaskCreated, version: number) =>
    append(binding, version, [{ type: "McpTaskExpired", sessionId: binding.sessionId, executionId: binding.executionId }]).pipe(
      Effect.andThen(Effect.logDebug("MCP task expired before its execution ended")),
      Effect.catchTag("ConcurrencyConflict", () => Effect.void)
    )

  /** Records the notifications of each later stage, until terminal or the task's expiry. */
  const watch = (binding: McpTaskCreated, from: ExecutionRecord, version: number, timeoutMs = binding.ttlMs) => {
    const key = taskStreamId(binding.sessionId, binding.executionId)
    const state = { binding, last: from, next: version }
    return Effect.scoped(Effect.andThen(
      Effect.sync(() => void watched.set(key, state)),
      followStages(feed, executions, from, (record) => {
        const events = notified(binding, notificationsFor(binding, record))
        return Effect.map(append(binding, state.next, events), () => {
          state.next += events.length
          state.last = record
        })
      })
    )).pipe(
      Effect.timeoutOption(timeoutMs),
      Effect.flatMap((ended) => (ended._tag === "None" ? expire(binding, state.next) : Effect.void)),
      // Another watch of the task (a peer's, or one this process took up) recorded this stage
      // first: it goes on recording, this one gives way.
      Effect.catchTag("ConcurrencyConflict", () => Effect.logDebug("MCP task notifications recorded by another watch")),
      Effect.catchCause((cause) => Effect.logWarning("MCP task notifications stopped", cause)),
      // Left in the map when interrupted: the close's sweep (below) takes it up.
      Effect.tap(() => Effect.sync(() => void watched.delete(key))),
      Effect.annotateLogs({ taskId: binding.executionId })
    )
  }

  /**
   * When the process stops, its watches end with it; an execution the stop let finish (SIGTERM
   * waits for those in flight) may have reached its end after the follower last read the log.
   * So each watch left gets one last read of its record, and what it had not yet recorded is
   * appended (at the watch's version: a notification it did append meanwhile makes this a
   * conflict, ignored). Registered after the fiber set, so it runs first.
   */
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      yield* FiberSet.clear(watchers)
      yield* Effect.forEach(watched.values(), ({ binding, last, next }) =>
        Effect.gen(function*() {
          const current = yield* executions.get(binding.projectId, undefined, binding.executionId)
          const events = notified(binding, stagesAfter(last, current).flatMap((record) => notificationsFor(binding, record)))
          if (events.length > 0) yield* append(binding, next, events)
        }).pipe(Effect.ignore), { concurrency: 8, discard: true })
    }).pipe(Effect.timeoutOption(2000), Effect.ignore)
  )

  /** Watches an open task again from the stage its notifications reached, unless this process already does. */
  const resumeWatch = Effect.fnUntraced(function*(streamId: string) {
    if (watched.has(streamId)) return false
    const events = yield* store.readStream(streamId, 1)
    const first = events[0] === undefined ? undefined : decodeTaskEvent(events[0].data)
    if (first === undefined || first._tag === "None" || first.value.type !== "McpTaskCreated" || first.value.refusal !== undefined) return false
    const binding = first.value
    const reached = stageNotified(events)
    if (reached === undefined) return false
    const current = yield* Effect.option(executions.get(binding.projectId, undefined, binding.executionId))
    if (current._tag === "None") return false
    const from: ExecutionRecord = { ...current.value, status: reached === 0 ? "pending" : "running" }
    // Until the task expires, as the watch that made it would have.
    const left = binding.createdMs + binding.ttlMs - (yield* Clock.currentTimeMillis)
    if (left <= 0) return false
    yield* FiberSet.run(watchers, watch(binding, from, events.length, left))
    return true
  })

  /** Records the expiry of a task whose time to live ran out unwatched. */
  const expireLapsed = Effect.fnUntraced(function*(streamId: string) {
    const events = yield* store.readStream(streamId, 1)
    const first = events[0] === undefined ? undefined : decodeTaskEvent(events[0].data)
    if (first === undefined || first._tag === "None" || first.value.type !== "McpTaskCreated") return false
    yield* expire(first.value, events.length)
    return true
  })

  /**
   * With a database, while the process starts: the tasks still open in the log whose watch ended
   * with the process that made them (a restart, a kill -9) are watched here, so a task whose
   * execution the restart interrupts, or runs later, still gets its terminal progress and
   * status. A task a live peer still watches is taken up as well; of two watches, the one whose
   * append comes second gives way (`watch`), so no notification is recorded twice.
   */
  const resumeWatches = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const open = yield* listAll(views, OPEN_TASKS_TABLE, { where: [], key: "stream_id", pageSize: OPEN_TASKS_PAGE })
    let resumed = 0
    let expired = 0
    for (const row of open) {
      const streamId = String(row.stream_id)
      if (Number(row.expires_ms) > now) {
        if (yield* resumeWatch(streamId)) resumed++
        continue
      }
      // Its time to live ran out while no process watched it (a row left before McpTaskExpired
      // existed, or a process gone at that moment): it leaves the view.
      if (yield* expireLapsed(streamId)) expired++
    }
    if (resumed > 0) yield* Effect.logInfo(`took up the notifications of ${resumed} open MCP tasks`)
    if (expired > 0) yield* Effect.logInfo(`closed ${expired} MCP tasks whose time to live ran out unwatched`)
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("taking up open MCP tasks failed", cause)))

  if (yield* isDurable) yield* FiberSet.run(watchers, resumeWatches)

  const readBinding = (sessionId: string, executionId: string) =>
    Effect.map(Effect.orDie(store.readStream(taskStreamId(sessionId, executionId), 1)), (events) => {
      const first = events[0]
      if (first === undefined) return undefined
      const decoded = decodeTaskEvent(first.data)
      return decoded._tag === "Some" && decoded.value.type === "McpTaskCreated" ? decoded.value : undefined
    })

  const open: TasksShape["open"] = Effect.fnUntraced(function*(session, record, ttl, progressToken) {
    const binding = yield* bindingOf(session, record.executionId, ttl, progressToken !== undefined ? { progressToken } : {})
    // Queued (and, for a replayed execution, everything up to now) goes with the creation.
    const first = notified(binding, [
      ...(progressToken !== undefined && !isTerminal(record) ? [progressNotification(progressToken, { ...record, status: "pending" }, { taskId: record.executionId })] : []),
      ...(isTerminal(record) ? notificationsFor(binding, record) : [])
    ])
    // The commit and the start of its watch are one step: a client going away mid-call
    // interrupts the request, and a task committed without its watch would never record its
    // terminal status (outside audit: 10 of 34 calls aborted during the commit).
    const created = yield* Effect.uninterruptibleMask((restore) =>
      append(binding, 0, [binding, ...first]).pipe(
        Effect.as(true),
        Effect.catchTag("ConcurrencyConflict", () => Effect.succeed(false)),
        Effect.orDie,
        Effect.tap((made) => (made && !isTerminal(record) ? FiberSet.run(watchers, restore(watch(binding, record, 1 + first.length))) : Effect.void))
      )
    )
    if (!created) {
      // The same call again (an idempotent replay in this session): the task it made before,
      // watched here unless it is already (its call's process died, or was stopped).
      const existing = yield* readBinding(session.sessionId, record.executionId)
      if (existing !== undefined && !isTerminal(record)) yield* Effect.ignore(resumeWatch(taskStreamId(session.sessionId, record.executionId)))
      return taskOf(existing ?? binding, record)
    }
    return taskOf(binding, record)
  })

  const refuse: TasksShape["refuse"] = Effect.fnUntraced(function*(session, refusal, ttl) {
    const binding = yield* bindingOf(session, newId("tsk"), ttl, { refusal })
    const task = refusedTaskOf(binding, refusal)
    yield* Effect.orDie(append(binding, 0, [binding, ...notified(binding, [statusOf(task)])]))
    return task
  })

  const find: TasksShape["find"] = Effect.fnUntraced(function*(session, taskId) {
    if (!/^(exe|tsk)_[0-9a-z]{1,64}$/.test(taskId)) return undefined
    const binding = yield* readBinding(session.sessionId, taskId)
    if (binding === undefined) return undefined
    return binding.createdMs + binding.ttlMs > (yield* Clock.currentTimeMillis) ? binding : undefined
  })

  return { open, refuse, find } satisfies TasksShape
})
