/**
 * A task-creating `tools/call` whose client goes away mid-call (decisions.md section 7, docs/mcp.md:
 * "the process that creates a task watches its execution … and appends the task's
 * notifications"). Outside audit: a call aborted between the task's commit and the start of its
 * watch left a task that never got its terminal `notifications/tasks/status` until a restart
 * (5 of 32 aborted calls; here, on Postgres, 10 of 34 before the fix).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type GatewayUnderTest, startGateway } from "./support/Gateway.ts"
import { headersFor, messageOf, openSession, parseSse, post } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_aborts" }

const MODES: ReadonlyArray<readonly [string, boolean]> = [["in memory", false], ...(postgresAvailable ? [["on Postgres", true] as const] : [])]

describe.each(MODES)("task calls whose client goes away, %s", (_mode, durable) => {
  let gw: GatewayUnderTest
  let url = ""
  beforeAll(async () => {
    if (durable) url = await createTestDatabase("mcp_aborts")
    gw = await startGateway(durable ? { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 9).toString("base64") } : {})
  })
  afterAll(async () => {
    await gw?.close()
    if (url !== "") await dropTestDatabase(url)
  })

  it("still get their terminal status on the session's GET stream", async () => {
    const session = await openSession(gw.url, { headers: USER })
    const stream = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: USER }) })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    const decoder = new TextDecoder()
    let text = ""
    void (async () => {
      while (true) {
        const next = await reader.read().catch(() => ({ done: true as const, value: undefined }))
        if (next.done) return
        text += decoder.decode(next.value, { stream: true })
      }
    })()
    const terminal = () => {
      const done = new Set<string>()
      for (const event of parseSse(text)) {
        if (event.data === "") continue
        const message = JSON.parse(event.data) as { method?: string; params?: { taskId?: string; status?: string } }
        if (message.method === "notifications/tasks/status" && message.params?.status === "completed") done.add(message.params.taskId ?? "")
      }
      return done
    }
    // One at a time, each aborted 8 to 36 ms after it was sent: some during the task's commit.
    for (let i = 0; i < 45; i++) {
      const aborted = new AbortController()
      setTimeout(() => aborted.abort(), 8 + (i % 15) * 2)
      await fetch(gw.url, {
        method: "POST",
        headers: headersFor({ session, headers: USER }),
        body: JSON.stringify({ jsonrpc: "2.0", id: `call-${i}`, method: "tools/call", params: { name: "demo.sleep", arguments: { ms: 200 }, task: { ttl: 600_000 } } }),
        signal: aborted.signal
      }).then((response) => response.text()).catch(() => undefined)
    }
    // The tasks that exist are those whose executions the session can read as tasks.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const listed = await gw.service.fetch("/v1/executions?userId=user_aborts&limit=100")
    const executions = ((await listed.json()) as { executions: ReadonlyArray<{ executionId: string; status: string }> }).executions
    expect(executions.length).toBeGreaterThan(0)
    const tasks: Array<string> = []
    for (const execution of executions) {
      const got = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: `get-${execution.executionId}`, method: "tasks/get", params: { taskId: execution.executionId } }, { session, headers: USER }))
      if (got.result !== undefined) tasks.push(execution.executionId)
    }
    expect(tasks.length).toBeGreaterThan(0)
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline && !tasks.every((id) => terminal().has(id))) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(tasks.filter((id) => !terminal().has(id))).toEqual([])
    await reader.cancel()
  }, 30_000)
})
