/**
 * The event log as the gateway listens to it: one follower per process, fanned out.
 *
 * Why one follower: every GET stream following the log itself would cost Postgres a feed read
 * per append per open stream. Here one fiber follows the feed from the head at start-up and
 * hands each event it cares about to whoever asked, by key, without decoding the rest:
 * - execution events, to the watchers of that execution (progress and task status, Tasks.ts);
 * - `mcp-task` events, to the open GET streams of the session in their stream id;
 * - connection events, to the open GET streams of the connection's project (tools/list changes).
 * A GET stream that resumes from an older position reads that part of the feed itself first
 * (SessionStream.ts), then continues here; events it saw both ways are told apart by position.
 *
 * A subscriber's queue slides (keeps the newest 1,024): a client that stops reading cannot make
 * the process hold an unbounded backlog for it.
 */
import { Effect, Queue, Schema, type Scope, Stream } from "effect"
import { CONNECTION_STREAM_TYPE } from "../domain/Connection.ts"
import { STREAM_TYPE as EXECUTION_STREAM_TYPE } from "../domain/executions/Execution.ts"
import { ExecutionRecord } from "../domain/executions/ExecutionRecord.ts"
import { comparePositions, EventStore, type Position, type RecordedEvent } from "../infra/eventlog/EventStore.ts"

export const MCP_TASK_STREAM_TYPE = "mcp-task"

const EXECUTION_PREFIX = "execution-"
const MCP_TASK_PREFIX = "mcp-task-"

/** `mcp-task-<session id>-<execution id>`: one task of one session. */
export const taskStreamId = (sessionId: string, executionId: string): string => `${MCP_TASK_PREFIX}${sessionId}-${executionId}`

/** The session of an `mcp-task` stream id (session ids have no `-`). */
export const sessionOfTaskStream = (streamId: string): string =>
  streamId.slice(MCP_TASK_PREFIX.length, streamId.indexOf("-", MCP_TASK_PREFIX.length))

const WithRecord = Schema.Struct({ record: ExecutionRecord })
const decodeWithRecord = Schema.decodeUnknownOption(WithRecord)
const WithProject = Schema.Struct({ projectId: Schema.String })
const decodeWithProject = Schema.decodeUnknownOption(WithProject)

/** The record an execution event carries (every event after the request carries one). */
export const recordOf = (event: RecordedEvent): ExecutionRecord | undefined => {
  const decoded = decodeWithRecord(event.data)
  return decoded._tag === "Some" ? decoded.value.record : undefined
}

/** The project of a connection event. */
export const projectOf = (event: RecordedEvent): string | undefined => {
  const decoded = decodeWithProject(event.data)
  return decoded._tag === "Some" ? decoded.value.projectId : undefined
}

export interface LogFeedShape {
  /** Where the follower has got to: a position every later event is after. */
  readonly position: () => Position
  /**
   * The records of an execution's later events, as the follower reads them, for as long as the
   * scope lasts. Registered when this returns, so a caller reads the current record after it.
   */
  readonly watchExecution: (executionId: string) => Effect.Effect<Queue.Dequeue<ExecutionRecord>, never, Scope.Scope>
  /** The session's `mcp-task` events and its project's connection events, for the scope. */
  readonly subscribeSession: (sessionId: string, projectId: string) => Effect.Effect<Queue.Dequeue<RecordedEvent>, never, Scope.Scope>
}

const QUEUE_CAPACITY = 1024

/** Adds `value` under `key` for the scope, removing it (and an emptied set) when the scope closes. */
const registerIn = <K, V>(map: Map<K, Set<V>>, key: K, value: V) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const set = map.get(key) ?? new Set<V>()
      set.add(value)
      map.set(key, set)
    }),
    () =>
      Effect.sync(() => {
        const set = map.get(key)
        set?.delete(value)
        if (set?.size === 0) map.delete(key)
      })
  )

/** The follower, running for as long as the scope it is made in. */
export const makeLogFeed = Effect.gen(function*() {
  const store = yield* EventStore
  const executions = new Map<string, Set<Queue.Queue<ExecutionRecord>>>()
  const sessions = new Map<string, Set<Queue.Queue<RecordedEvent>>>()
  const projects = new Map<string, Set<Queue.Queue<RecordedEvent>>>()
  let position = yield* Effect.orDie(store.head)

  const dispatch = (event: RecordedEvent) => {
    if (comparePositions(event.position, position) <= 0) return
    position = event.position
    switch (event.streamType) {
      case EXECUTION_STREAM_TYPE: {
        const watchers = executions.get(event.streamId.slice(EXECUTION_PREFIX.length))
        if (watchers === undefined) return
        const record = recordOf(event)
        if (record !== undefined) for (const queue of watchers) Queue.offerUnsafe(queue, record)
        return
      }
      case MCP_TASK_STREAM_TYPE: {
        for (const queue of sessions.get(sessionOfTaskStream(event.streamId)) ?? []) Queue.offerUnsafe(queue, event)
        return
      }
      case CONNECTION_STREAM_TYPE: {
        if (projects.size === 0) return
        const projectId = projectOf(event)
        if (projectId === undefined) return
        for (const queue of projects.get(projectId) ?? []) Queue.offerUnsafe(queue, event)
        return
      }
    }
  }

  // Follows from where it got to; a storage fault is retried after a second, never fatal.
  const follow = Effect.suspend(() => Stream.runForEach(store.follow(position), (event) => Effect.sync(() => dispatch(event))))
  yield* Effect.forkScoped(follow.pipe(Effect.catch(() => Effect.sleep("1 second")), Effect.forever))

  const feed: LogFeedShape = {
    position: () => position,
    watchExecution: Effect.fnUntraced(function*(executionId: string) {
      const queue = yield* Effect.acquireRelease(Queue.sliding<ExecutionRecord>(QUEUE_CAPACITY), Queue.shutdown)
      yield* registerIn(executions, executionId, queue)
      return queue
    }),
    subscribeSession: Effect.fnUntraced(function*(sessionId: string, projectId: string) {
      const queue = yield* Effect.acquireRelease(Queue.sliding<RecordedEvent>(QUEUE_CAPACITY), Queue.shutdown)
      yield* registerIn(sessions, sessionId, queue)
      yield* registerIn(projects, projectId, queue)
      return queue
    })
  }
  return feed
})
