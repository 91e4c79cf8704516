/**
 * Sessions and tasks outlive the process that made them (issue "MCP gateway", item 5; decisions
 * 7): two real service processes on one Postgres; a session opened and tasks created on one,
 * which is then killed with -9; the other answers for the session, `tasks/get` and `tasks/result`
 * of the finished task, and for the task that was running when its process died, the
 * `execution_interrupted` failure recovery gives it once the dead process's lease has lapsed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type ChildService, startPeers } from "../support/Service.ts"
import { messageOf, openSession, post } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }

describe.skipIf(!postgresAvailable)("MCP after a kill -9", () => {
  let url: string
  let peers: readonly [ChildService, ChildService]
  beforeAll(async () => {
    url = await createTestDatabase("mcpkill")
    peers = await startPeers({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 6).toString("base64") })
  }, 60_000)
  afterAll(async () => {
    for (const peer of peers ?? []) await peer.stop().catch(() => undefined)
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("the surviving process serves the session and both tasks", async () => {
    const [doomed, survivor] = peers
    const doomedUrl = `${doomed.baseUrl}/mcp`
    const survivorUrl = `${survivor.baseUrl}/mcp`
    const session = await openSession(doomedUrl, { headers: USER })
    const call = (id: number, name: string, args: unknown) =>
      post(doomedUrl, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args, task: { ttl: 600_000 } } }, { session, headers: USER })
    const finished = ((await messageOf(await call(1, "demo.echo", { kept: "yes" }))).result as { task: { taskId: string } }).task.taskId
    const running = ((await messageOf(await call(2, "demo.sleep", { ms: 60_000 }))).result as { task: { taskId: string } }).task.taskId
    // The finished task's outcome is durable before the kill.
    const done = await messageOf(await post(doomedUrl, { jsonrpc: "2.0", id: 3, method: "tasks/result", params: { taskId: finished } }, { session, headers: USER }))
    expect(done.result).toMatchObject({ structuredContent: { kept: "yes" } })
    await new Promise((resolve) => setTimeout(resolve, 300))
    await doomed.kill9()

    const ask = (id: number, method: string, taskId: string) =>
      post(survivorUrl, { jsonrpc: "2.0", id, method, params: { taskId } }, { session, headers: USER }).then(messageOf)
    expect((await ask(10, "tasks/get", finished)).result).toMatchObject({ taskId: finished, status: "completed" })
    expect((await ask(11, "tasks/result", finished)).result).toMatchObject({ structuredContent: { kept: "yes" } })
    // The running one: its owner is gone; once its lease lapses (5 s in tests), recovery fails it.
    const result = await ask(12, "tasks/result", running)
    expect(result.result).toMatchObject({ isError: true })
    const meta = (result.result as { _meta: Record<string, { status?: string; code?: string }> })._meta
    expect(meta["dev.service/execution"]).toMatchObject({ status: "failed" })
    expect(meta["dev.service/error"]).toMatchObject({ code: "execution_interrupted" })
    expect((await ask(13, "tasks/get", running)).result).toMatchObject({ taskId: running, status: "failed" })
  }, 90_000)
})
