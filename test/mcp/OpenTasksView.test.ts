/**
 * The open-tasks view (mcp/OpenTasks.ts) and what memory retention does with tasks: a task is a
 * row from its creation to its terminal status; in memory an expired row goes with the sweep,
 * and so does every task stream left idle past the longest time to live (before, task streams
 * stayed in memory for as long as the process ran).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { layerMemory } from "../../infra/eventlog/MemoryEventStore.ts"
import { sweep } from "../../infra/eventlog/MemoryRetention.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { ViewStore } from "../../infra/eventlog/ViewStore.ts"
import { MCP_TASK_STREAM_TYPE, taskStreamId } from "../../mcp/LogFeed.ts"
import { OPEN_TASKS_TABLE, openTasksProjection, TASK_TTL_MAX_MS } from "../../mcp/OpenTasks.ts"
import { encodeTaskEvent, type McpTaskCreated, type McpTaskEvent } from "../../mcp/TaskEvents.ts"

const Memory = layerMemory.pipe(Layer.provideMerge(Layer.succeed(Projections, [openTasksProjection])))

let ids = 0
const append = (streamId: string, events: ReadonlyArray<McpTaskEvent>) =>
  Effect.gen(function*() {
    const store = yield* EventStore
    const version = (yield* store.readStream(streamId, 1)).length
    yield* store.append([{ streamId, streamType: MCP_TASK_STREAM_TYPE, expectedVersion: version, events: events.map((event) => encodeTaskEvent(event, `evt_${++ids}`)) }])
  })

const created = (sessionId: string, executionId: string, createdMs: number, ttlMs: number): McpTaskCreated =>
  ({ type: "McpTaskCreated", sessionId, executionId, projectId: "p1", ttlMs, createdMs })

const notified = (sessionId: string, executionId: string, method: string, params: { readonly [key: string]: string | number }): McpTaskEvent =>
  ({ type: "McpTaskNotified", sessionId, executionId, notification: { method, params } })

const openRows = Effect.gen(function*() {
  const rows = yield* (yield* ViewStore).list(OPEN_TASKS_TABLE, { orderBy: [{ column: "stream_id", direction: "asc" }], limit: 100 })
  return rows.map((row) => row.stream_id)
})

const eventsOf = (streamId: string) => Effect.gen(function*() {
  return (yield* (yield* EventStore).readStream(streamId, 1)).length
})

describe("the open-tasks view", () => {
  it.effect("holds a task from its creation to its terminal status; a refused call's task never", () =>
    Effect.gen(function*() {
      const open = taskStreamId("ses1", "exe_open")
      const done = taskStreamId("ses1", "exe_done")
      const refused = taskStreamId("ses1", "tsk_refused")
      yield* append(open, [created("ses1", "exe_open", 0, 60_000), notified("ses1", "exe_open", "notifications/progress", { progressToken: "t", progress: 1, total: 2 })])
      yield* append(done, [created("ses1", "exe_done", 0, 60_000)])
      assert.deepStrictEqual(yield* openRows, [done, open])
      yield* append(done, [notified("ses1", "exe_done", "notifications/tasks/status", { taskId: "exe_done", status: "completed" })])
      yield* append(refused, [
        { ...created("ses1", "tsk_refused", 0, 60_000), refusal: { code: "invalid_input", message: "m", retryable: false } },
        notified("ses1", "tsk_refused", "notifications/tasks/status", { taskId: "tsk_refused", status: "failed" })
      ])
      assert.deepStrictEqual(yield* openRows, [open])
    }).pipe(Effect.provide(Memory)))

  it.effect("in memory: an expired task's row and stream go after the window, an idle task stream after the longest time to live", () =>
    Effect.gen(function*() {
      const open = taskStreamId("ses2", "exe_open")
      const done = taskStreamId("ses2", "exe_done")
      yield* append(open, [created("ses2", "exe_open", 0, 60_000)])
      yield* append(done, [created("ses2", "exe_done", 0, TASK_TTL_MAX_MS), notified("ses2", "exe_done", "notifications/tasks/status", { taskId: "exe_done", status: "completed" })])

      // Within the open task's time to live, a window of a second drops nothing of tasks.
      yield* TestClock.adjust("30 seconds")
      yield* sweep(1000)
      assert.deepStrictEqual(yield* openRows, [open])
      assert.strictEqual(yield* eventsOf(open), 1)
      assert.strictEqual(yield* eventsOf(done), 2)

      // Expired and past the window: the open task's row and stream go; the finished task's stream
      // stays while the task may still be read.
      yield* TestClock.adjust("2 minutes")
      yield* sweep(1000)
      assert.deepStrictEqual(yield* openRows, [])
      assert.strictEqual(yield* eventsOf(open), 0)
      assert.strictEqual(yield* eventsOf(done), 2)

      yield* TestClock.adjust(TASK_TTL_MAX_MS)
      yield* sweep(1000)
      assert.strictEqual(yield* eventsOf(done), 0)
    }).pipe(Effect.provide(Memory)))
})
