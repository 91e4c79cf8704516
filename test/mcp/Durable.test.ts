/**
 * With a database (spec, "Limits: MCP"; decisions.md section 7): sessions are rows of
 * `mcp_sessions`, served by any gateway on the same Postgres and after a restart; tasks answer
 * from the execution records after a restart; a GET stream on one gateway gets the notifications
 * of a task another gateway created; expired and deleted sessions are 404 everywhere.
 */
import { CallToolResultSchema, CreateTaskResultSchema, TaskStatusNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { connect } from "./support/Clients.ts"
import { type GatewayUnderTest, openedEventId, sealedEventId, startGateway } from "./support/Gateway.ts"
import { headersFor, initializeMessage, messageOf, openSession, post, readEvents, VERSION } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }
const LIST = { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }

describe.skipIf(!postgresAvailable)("MCP sessions with a database", () => {
  let url = ""
  let env: Record<string, string> = {}
  let first: GatewayUnderTest
  let second: GatewayUnderTest

  beforeAll(async () => {
    url = await createTestDatabase("mcp")
    env = { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 9).toString("base64") }
    first = await startGateway(env)
    // A second instance of the service on the same database.
    second = await startGateway(env)
  })
  afterAll(async () => {
    await second?.close().catch(() => undefined)
    await first?.close().catch(() => undefined)
    if (url !== "") await dropTestDatabase(url)
  })

  it("keeps a session as a row: identity, version and negotiated capabilities, expiry 24 h on", async () => {
    const session = await openSession(first.url, { headers: USER })
    const [row] = await runSql<Record<string, unknown>>(url, `SELECT * FROM mcp_sessions WHERE session_id = '${session}'`)
    expect(row).toMatchObject({ project_id: "proj_test", user_id: "user_1", pinned_user_id: null, protocol_version: "2025-11-25", tasks: true })
    expect(row!.key_hash).toMatch(/^[0-9a-f]{64}$/)
    expect(row!.client_capabilities).toEqual({ tasks: {} })
    expect(Number(row!.expires_ms) - Number(row!.created_ms)).toBe(24 * 60 * 60 * 1000)
    expect(row!.created_position).toMatch(/^\d+:\d+$/)
  })

  it("keeps the names of the client's capabilities, not their contents: a session row stays small whatever initialize sends", async () => {
    // Outside audit: 800 KB of `experimental` per initialize, kept 24 h, took memory mode out of
    // memory at 2,000 sessions and made every request of the project read a fat row; nested
    // 5,000 deep it was a retryable 500 on Postgres (a stack overflow writing the row).
    const fat = { tasks: {}, roots: { listChanged: true }, experimental: { pad: { text: "x".repeat(800_000) }, tasks: {} } }
    const big = await openSession(first.url, { headers: USER, capabilities: fat })
    // Written as text. 5,000 levels are now refused before parsing (a message nests 512 levels
    // at most: 400, -32600, no session); 500 still reach the session's row, as names only.
    const deep = (levels: number) => `${'{"d":'.repeat(levels)}{}${"}".repeat(levels)}`
    const initializeWith = (levels: number) =>
      post(first.url, JSON.stringify(initializeMessage(VERSION, { tasks: {}, experimental: "DEEP" })).replace('"DEEP"', deep(levels)), {
        headers: USER,
        version: null
      })
    const tooDeep = await initializeWith(5_000)
    expect(tooDeep.status).toBe(400)
    expect(tooDeep.headers.get("mcp-session-id")).toBeNull()
    expect(await tooDeep.json()).toMatchObject({ id: null, error: { code: -32600 } })
    const initialize = await initializeWith(500)
    expect(initialize.status).toBe(200)
    await initialize.text()
    const nested = initialize.headers.get("mcp-session-id") ?? ""
    await (await post(first.url, { jsonrpc: "2.0", method: "notifications/initialized" }, { session: nested, headers: USER })).text()
    const rows = await runSql<{ session_id: string; capabilities: unknown; size: number; tasks: boolean }>(url,
      `SELECT session_id, client_capabilities AS capabilities, octet_length(client_capabilities::text) AS size, tasks
       FROM mcp_sessions WHERE session_id IN ('${big}', '${nested}')`)
    const byId = new Map(rows.map((row) => [row.session_id, row]))
    expect(byId.get(big)?.capabilities).toEqual({ tasks: {}, roots: {}, experimental: { pad: {}, tasks: {} } })
    expect(byId.get(nested)?.capabilities).toEqual({ tasks: {}, experimental: { d: {} } })
    for (const row of rows) {
      expect(Number(row.size)).toBeLessThan(1_000)
      expect(row.tasks).toBe(true)
    }
    // Both sessions serve.
    for (const session of [big, nested]) expect((await post(first.url, LIST, { session, headers: USER })).status).toBe(200)
  })

  it("resumes a GET stream from no earlier than the session's start, on either gateway", async () => {
    // A change of the user's connections committed before the session exists.
    const before = await first.service.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "ned", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb" }, scopes: ["chat:write"] }
    })
    expect(before.status).toBe(201)
    const user = { "x-service-user-id": "ned" }
    const session = await openSession(first.url, { headers: user })
    for (const gateway of [first, second]) {
      const stream = await fetch(gateway.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": await sealedEventId(first, session, "0:0") } }) })
      expect(stream.status).toBe(200)
      const events = await readEvents(stream, 2, 1_000)
      expect(events.filter((e) => e.data !== "")).toEqual([])
      // The priming event names where the stream starts: the session's start, not the log's.
      const [row] = await runSql<{ created_position: string }>(url, `SELECT created_position FROM mcp_sessions WHERE session_id = '${session}'`)
      expect((await openedEventId(gateway, session, events[0]!.id)).startsWith(`${row!.created_position}:g`)).toBe(true)
    }
  })

  it("serves a session made by one gateway from another, and its tasks too", async () => {
    const session = await openSession(first.url, { headers: USER })
    expect((await post(second.url, LIST, { session, headers: USER })).status).toBe(200)
    const created = await messageOf(await post(first.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "demo.sleep", arguments: { ms: 200 }, task: {} }
    }, { session, headers: USER }))
    const taskId = (created.result as { task: { taskId: string } }).task.taskId
    const result = await messageOf(await post(second.url, { jsonrpc: "2.0", id: 3, method: "tasks/result", params: { taskId } }, { session, headers: USER }))
    expect(result.result).toMatchObject({ structuredContent: { sleptMs: 200 } })
    // A refused call's task (no execution behind it) is the log's too.
    const refused = await messageOf(await post(first.url, {
      jsonrpc: "2.0",
      id: 4,
      method: "tools/call",
      params: { name: "demo.sleep", arguments: { ms: -1 }, task: {} }
    }, { session, headers: USER }))
    const refusedId = (refused.result as { task: { taskId: string; status: string } }).task.taskId
    expect(refused.result).toMatchObject({ task: { status: "failed" } })
    const got = await messageOf(await post(second.url, { jsonrpc: "2.0", id: 5, method: "tasks/get", params: { taskId: refusedId } }, { session, headers: USER }))
    expect(got.result).toMatchObject({ taskId: refusedId, status: "failed" })
    const failure = await messageOf(await post(second.url, { jsonrpc: "2.0", id: 6, method: "tasks/result", params: { taskId: refusedId } }, { session, headers: USER }))
    expect(failure.result).toMatchObject({ isError: true, _meta: { "dev.service/error": { code: "invalid_input" } } })
  })

  it("delivers a task's status to a GET stream on another gateway, through the log", async () => {
    const listener = await connect(second.url, { headers: USER })
    const statuses: Array<string> = []
    listener.client.setNotificationHandler(TaskStatusNotificationSchema, (n) => void statuses.push(n.params.status))
    await new Promise((resolve) => setTimeout(resolve, 300))
    const sessionId = listener.transport.sessionId!
    const created = await messageOf(await post(first.url, {
      jsonrpc: "2.0",
      id: 9,
      method: "tools/call",
      params: { name: "demo.echo", arguments: {}, task: {} }
    }, { session: sessionId, headers: USER }))
    expect(created.result).toHaveProperty("task")
    const deadline = Date.now() + 10_000
    while (statuses.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(statuses).toEqual(["completed"])
    await listener.close()
  })

  it("answers 404 on every gateway for a deleted or expired session, and drops the expired row", async () => {
    const deleted = await openSession(first.url)
    expect((await fetch(second.url, { method: "DELETE", headers: headersFor({ session: deleted }) })).status).toBe(204)
    expect((await post(first.url, LIST, { session: deleted })).status).toBe(404)
    const expired = await openSession(first.url)
    await runSql(url, `UPDATE mcp_sessions SET expires_ms = 0 WHERE session_id = '${expired}'`)
    expect((await post(second.url, LIST, { session: expired })).status).toBe(404)
    expect(await runSql(url, `SELECT 1 FROM mcp_sessions WHERE session_id = '${expired}'`)).toEqual([])
  })

  it("keeps sessions and tasks across a restart of the service", async () => {
    const client = await connect(first.url, { headers: USER })
    const sessionId = client.transport.sessionId!
    const created = await client.client.request({ method: "tools/call", params: { name: "demo.echo", arguments: { kept: true }, task: {} } }, CreateTaskResultSchema)
    await client.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema)
    await client.client.close()
    await second.close()
    await first.close()

    const restarted = await startGateway(env)
    try {
      expect((await post(restarted.url, LIST, { session: sessionId, headers: USER })).status).toBe(200)
      const task = await messageOf(await post(restarted.url, { jsonrpc: "2.0", id: 5, method: "tasks/get", params: { taskId: created.task.taskId } }, { session: sessionId, headers: USER }))
      expect(task.result).toMatchObject({ taskId: created.task.taskId, status: "completed" })
      const result = await messageOf(await post(restarted.url, { jsonrpc: "2.0", id: 6, method: "tasks/result", params: { taskId: created.task.taskId } }, { session: sessionId, headers: USER }))
      expect(result.result).toMatchObject({ structuredContent: { kept: true } })
    } finally {
      await restarted.close()
    }
  })
})
