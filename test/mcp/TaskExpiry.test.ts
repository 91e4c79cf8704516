/**
 * Tasks whose time to live runs out before their execution ends (docs/mcp.md): they leave the
 * open-tasks view with an `McpTaskExpired` in their stream. Outside audit: on Postgres such rows
 * stayed in `mcp_open_tasks` for good, and every start read them again.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { ViewStore } from "../../infra/eventlog/ViewStore.ts"
import { MCP_TASK_STREAM_TYPE, taskStreamId } from "../../mcp/LogFeed.ts"
import { OPEN_TASKS_TABLE } from "../../mcp/OpenTasks.ts"
import { encodeTaskEvent, type McpTaskCreated } from "../../mcp/TaskEvents.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import { eventually } from "../support/WebhookReceiver.ts"

describe.skipIf(!postgresAvailable)("MCP tasks that expire unfinished, on Postgres", () => {
  let url = ""
  let env: Record<string, string> = {}
  const started: Array<InProcessService> = []
  beforeAll(async () => {
    url = await createTestDatabase("mcp_expiry")
    env = { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 9).toString("base64") }
  })
  afterAll(async () => {
    for (const service of started.toReversed()) await service.close().catch(() => undefined)
    if (url !== "") await dropTestDatabase(url)
  })

  const openRows = (service: InProcessService) =>
    service.runtime.runPromise(Effect.flatMap(ViewStore, (views) => views.list(OPEN_TASKS_TABLE, { orderBy: [{ column: "stream_id", direction: "asc" }], limit: 100 })))
      .then((rows) => rows.map((row) => String(row.stream_id)))

  const typesOf = (service: InProcessService, streamId: string) =>
    service.runtime.runPromise(Effect.flatMap(EventStore, (store) => store.readStream(streamId, 1))).then((events) => events.map((event) => event.type))

  it("leave the open-tasks view when their time to live runs out, watched or not", async () => {
    const first = await startService(env)
    started.push(first)
    const running = await first.fetch("/v1/execute", { method: "POST", json: { tool: "demo.sleep", userId: "u1", input: { ms: 8_000 }, mode: "async" } })
    expect(running.status).toBe(202)
    const { executionId } = (await running.json()) as { executionId: string }
    // Two tasks of that running execution, as a call would have made them: one with a second
    // left to live, one whose time ran out an hour ago while no process watched it.
    const now = Date.now()
    const task = (sessionId: string, createdMs: number): McpTaskCreated =>
      ({ type: "McpTaskCreated", sessionId, executionId, projectId: "proj_test", ttlMs: 60_000, createdMs })
    const ending = taskStreamId("ses_ending", executionId)
    const lapsed = taskStreamId("ses_lapsed", executionId)
    await first.runtime.runPromise(Effect.flatMap(EventStore, (store) => store.append([
      { streamId: ending, streamType: MCP_TASK_STREAM_TYPE, expectedVersion: 0, events: [encodeTaskEvent(task("ses_ending", now - 59_000), "evt_ending")] },
      { streamId: lapsed, streamType: MCP_TASK_STREAM_TYPE, expectedVersion: 0, events: [encodeTaskEvent(task("ses_lapsed", now - 3_600_000), "evt_lapsed")] }
    ])))
    expect(await openRows(first)).toEqual(expect.arrayContaining([ending, lapsed]))
    // A process that starts takes up the one still alive and closes the lapsed one; the live one
    // closes when its time runs out, its execution still running.
    const second = await startService(env)
    started.push(second)
    await eventually(async () => ((await openRows(second)).some((id) => id === ending || id === lapsed) ? undefined : true), 5_000, "both rows to go")
    expect(await typesOf(second, ending)).toEqual(["McpTaskCreated", "McpTaskExpired"])
    expect(await typesOf(second, lapsed)).toEqual(["McpTaskCreated", "McpTaskExpired"])
    const execution = (await (await second.fetch(`/v1/executions/${executionId}`)).json()) as { status: string }
    expect(execution.status).toBe("running")
  }, 30_000)
})
