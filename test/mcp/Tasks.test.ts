/**
 * Tasks are executions (spec, "MCP task", "MCP task status mapping"; decisions.md section 7),
 * through the SDK client's experimental tasks API: creation answers only the task, tasks/get,
 * tasks/result waiting for the terminal record, tasks/cancel and its -32602 refusals, session
 * scoping, ttl clamping, and the progress and status notifications on the GET stream.
 */
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  McpError,
  TaskStatusNotificationSchema
} from "@modelcontextprotocol/sdk/types.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect, type Connected } from "./support/Clients.ts"
import { type GatewayUnderTest, startGateway } from "./support/Gateway.ts"

const USER = { "x-service-user-id": "user_1" }

type Result = { isError?: boolean; structuredContent?: unknown; _meta?: Record<string, unknown> }

const createTask = (client: Connected["client"], name: string, args: Record<string, unknown>, task: Record<string, unknown> = {}, onprogress?: (p: Progress) => void) =>
  client.request(
    { method: "tools/call", params: { name, arguments: args, task } },
    CreateTaskResultSchema,
    onprogress === undefined ? {} : { onprogress }
  )

const rpcCode = async (promise: Promise<unknown>) => {
  try {
    await promise
    return undefined
  } catch (error) {
    return error instanceof McpError ? error.code : String(error)
  }
}

const eventually = async <A>(read: () => A, done: (value: A) => boolean, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

// Every case twice: answered by the SDK `Server`, and by the gateway's plain JSON path.
describe.each([["through the SDK server", false], ["as plain JSON", true]])("MCP tasks, %s", (_path, jsonOnly) => {
  let gw: GatewayUnderTest
  let conn: Connected
  beforeAll(async () => {
    gw = await startGateway()
    conn = await connect(gw.url, { headers: USER, jsonOnly })
  })
  afterAll(async () => {
    await conn.close()
    await gw.close()
  })

  it("answers a task-augmented call with only the task, whose id is the execution's", async () => {
    const created = await createTask(conn.client, "demo.sleep", { ms: 200 }, { ttl: 120_000 })
    expect(Object.keys(created).filter((k) => k !== "_meta")).toEqual(["task"])
    expect(created.task).toMatchObject({ status: "working", ttl: 120_000, pollInterval: 1000 })
    expect(created.task.taskId).toMatch(/^exe_/)
    const record = await (await gw.service.fetch(`/v1/executions/${created.task.taskId}`)).json() as { mode: string }
    expect(record.mode).toBe("async")
  })

  it("waits in tasks/result for the terminal record and answers it with both metadata keys", async () => {
    const created = await createTask(conn.client, "demo.sleep", { ms: 300 })
    const started = Date.now()
    const result = await conn.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema) as Result
    expect(Date.now() - started).toBeGreaterThanOrEqual(150)
    expect(result.structuredContent).toEqual({ sleptMs: 300 })
    expect(result._meta?.["io.modelcontextprotocol/related-task"]).toEqual({ taskId: created.task.taskId })
    expect(result._meta?.["dev.service/execution"]).toMatchObject({ executionId: created.task.taskId, status: "succeeded" })
    const task = await conn.client.experimental.tasks.getTask(created.task.taskId)
    expect(task).toMatchObject({ taskId: created.task.taskId, status: "completed" })
    expect(Date.parse(task.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(task.createdAt))
  })

  it("streams a task through callToolStream to its result", async () => {
    const kinds: Array<string> = []
    let final: Result | undefined
    for await (const message of conn.client.experimental.tasks.callToolStream({ name: "demo.echo", arguments: { via: "stream" } }, CallToolResultSchema, { task: {} })) {
      kinds.push(message.type)
      if (message.type === "result") final = message.result as Result
    }
    expect(kinds[0]).toBe("taskCreated")
    expect(kinds.at(-1)).toBe("result")
    expect(final?.structuredContent).toEqual({ via: "stream" })
  })

  it("maps a failed tool to a failed task whose result is the isError tool result", async () => {
    const created = await createTask(conn.client, "demo.fail", { code: "provider_error" })
    const result = await conn.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema) as Result
    expect(result.isError).toBe(true)
    expect(result._meta?.["dev.service/error"]).toMatchObject({ code: "provider_error" })
    expect(await conn.client.experimental.tasks.getTask(created.task.taskId)).toMatchObject({ status: "failed", statusMessage: expect.any(String) })
  })

  it("cancels a working task: the updated task, then a cancelled isError result with the execution", async () => {
    const created = await createTask(conn.client, "demo.sleep", { ms: 30_000 })
    const cancelled = await conn.client.experimental.tasks.cancelTask(created.task.taskId)
    expect(cancelled).toMatchObject({ taskId: created.task.taskId, status: "cancelled", ttl: 3_600_000 })
    expect((cancelled as { _meta?: Record<string, unknown> })._meta?.["io.modelcontextprotocol/related-task"]).toBeUndefined()
    const result = await conn.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema) as Result
    expect(result.isError).toBe(true)
    expect(result._meta?.["dev.service/error"]).toMatchObject({ code: "execution_cancelled" })
    expect(result._meta?.["dev.service/execution"]).toMatchObject({ executionId: created.task.taskId, status: "cancelled" })
    expect(await rpcCode(conn.client.experimental.tasks.cancelTask(created.task.taskId))).toBe(-32602)
  })

  it("refuses to cancel a completed task with -32602", async () => {
    const created = await createTask(conn.client, "demo.echo", {})
    await conn.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema)
    expect(await rpcCode(conn.client.experimental.tasks.cancelTask(created.task.taskId))).toBe(-32602)
  })

  it("resolves tasks in the caller's session only: another session's task is -32602", async () => {
    const created = await createTask(conn.client, "demo.echo", {})
    const other = await connect(gw.url, { headers: USER, jsonOnly })
    expect(await rpcCode(other.client.experimental.tasks.getTask(created.task.taskId))).toBe(-32602)
    expect(await rpcCode(other.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema))).toBe(-32602)
    expect(await rpcCode(other.client.experimental.tasks.cancelTask(created.task.taskId))).toBe(-32602)
    expect(await rpcCode(conn.client.experimental.tasks.getTask("exe_00000000000000000000000000000000"))).toBe(-32602)
    await other.close()
  })

  // MCP 2025-11-25, "Tasks": a receiver that accepts a task-augmented request MUST answer a
  // CreateTaskResult, and a tool's input errors are task execution errors (the task fails).
  it("answers a task call refused before any execution with a failed task whose result is the refusal", async () => {
    const before = await (await gw.service.fetch("/v1/executions?userId=user_1")).json() as { executions: Array<unknown> }
    const created = await createTask(conn.client, "demo.sleep", { ms: -1 }, { ttl: 90_000 })
    expect(Object.keys(created).filter((k) => k !== "_meta")).toEqual(["task"])
    expect(created.task).toMatchObject({ status: "failed", ttl: 90_000, pollInterval: 1000, statusMessage: expect.stringContaining("demo.sleep") })
    expect(created.task.taskId).toMatch(/^tsk_/)
    const taskId = created.task.taskId
    expect(await conn.client.experimental.tasks.getTask(taskId)).toMatchObject({ taskId, status: "failed", createdAt: created.task.createdAt })
    const result = await conn.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema) as Result
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toBeUndefined()
    expect(result._meta?.["dev.service/error"]).toMatchObject({ code: "invalid_input", retryable: false })
    expect(result._meta?.["dev.service/execution"]).toBeUndefined()
    expect(result._meta?.["io.modelcontextprotocol/related-task"]).toEqual({ taskId })
    expect(await rpcCode(conn.client.experimental.tasks.cancelTask(taskId))).toBe(-32602)
    const other = await connect(gw.url, { headers: USER, jsonOnly })
    expect(await rpcCode(other.client.experimental.tasks.getTask(taskId))).toBe(-32602)
    expect(await rpcCode(other.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema))).toBe(-32602)
    await other.close()
    // No execution was made for it.
    const after = await (await gw.service.fetch("/v1/executions?userId=user_1")).json() as { executions: Array<unknown> }
    expect(after.executions.length).toBe(before.executions.length)
  })

  it("fails the task, not the call, for a missing user, a missing connection and an unknown tool behind service.execute_tool", async () => {
    const anonymous = await connect(gw.url, { jsonOnly })
    const cases = [
      [anonymous.client, "demo.echo", {}, "invalid_input"],
      [conn.client, "slack.post_message", { channel: "C1", text: "hi" }, "invalid_input"],
      [conn.client, "service.execute_tool", { name: "no.such_tool" }, "invalid_input"]
    ] as const
    for (const [client, name, args, code] of cases) {
      const created = await createTask(client, name, args)
      expect(created.task.status).toBe("failed")
      const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema) as Result
      expect(result._meta?.["dev.service/error"]).toMatchObject({ code })
    }
    await anonymous.close()
  })

  it("streams a refused task call through callToolStream to its failure", async () => {
    const kinds: Array<string> = []
    for await (const message of conn.client.experimental.tasks.callToolStream({ name: "demo.sleep", arguments: { ms: "x" } }, CallToolResultSchema, { task: {} })) {
      kinds.push(message.type)
    }
    expect(kinds).toEqual(["taskCreated", "taskStatus", "error"])
  })

  it("clamps ttl to 1 min..24 h, default 1 h", async () => {
    expect((await createTask(conn.client, "demo.echo", {}, { ttl: 5 })).task.ttl).toBe(60_000)
    expect((await createTask(conn.client, "demo.echo", {}, { ttl: 10 ** 12 })).task.ttl).toBe(86_400_000)
    expect((await createTask(conn.client, "demo.echo", {})).task.ttl).toBe(3_600_000)
  })

  it("sends progress and the terminal task status on the session's GET stream", async () => {
    const listener = await connect(gw.url, { headers: USER })
    const statuses: Array<{ taskId: string; status: string }> = []
    listener.client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push({ taskId: n.params.taskId, status: n.params.status }))
    // The client opens its GET stream after `initialized`; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 300))
    const progress: Array<Progress> = []
    const created = await createTask(listener.client, "demo.sleep", { ms: 300 }, {}, (p) => void progress.push(p))
    await eventually(() => statuses.length, (n) => n > 0)
    expect(statuses).toEqual([{ taskId: created.task.taskId, status: "completed" }])
    await eventually(() => progress.length, (n) => n >= 3)
    expect(progress.map((p) => p.message)).toEqual(["queued", "running", "succeeded"])
    await listener.close()
  })
})
