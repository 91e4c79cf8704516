/**
 * A `tasks/result` waiting while its process stops (SIGTERM) must not say the task expired: the
 * task is still within its time to live and readable elsewhere or after a restart, and a client
 * takes -32602 as final. It is answered as any request the stop cuts short: -32000 "The request
 * was cancelled." (outside audit: it answered -32602 "expired before it finished").
 *
 * A task whose execution the stop lets finish still gets its terminal notifications (outside
 * audit: the watch was cut when the layers closed, before the follower read the outcome).
 */
import { afterAll, describe, expect, it } from "vitest"
import { dropTestDatabase, postgresAvailable, storeEnv } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { headersFor, messageOf, openSession, post, readEvents } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }

describe("MCP while the process stops", () => {
  let service: ChildService | undefined
  afterAll(async () => {
    await service?.kill9().catch(() => undefined)
  })

  it.each(["application/json", "text/event-stream"])("a tasks/result waiting (answered as %s) is cancelled, not expired", async (accept) => {
    service = await startProcess({}, await freePort())
    const url = `${service.baseUrl}/mcp`
    const session = await openSession(url, { headers: USER })
    const created = await messageOf(await post(url, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "demo.sleep", arguments: { ms: 60_000 }, task: { ttl: 3_600_000 } }
    }, { session, headers: USER }))
    const taskId = (created.result as { task: { taskId: string } }).task.taskId
    const waiting = post(url, { jsonrpc: "2.0", id: 2, method: "tasks/result", params: { taskId } }, { session, headers: { ...USER, accept } })
      .then(messageOf)
      .catch(() => ({ dropped: true }))
    await new Promise((resolve) => setTimeout(resolve, 300))
    await service.stop()
    const answer = (await waiting) as { error?: { code: number; message: string }; dropped?: boolean }
    if (answer.dropped !== true) expect(answer.error).toEqual({ code: -32000, message: "The request was cancelled." })
  }, 60_000)

  it.skipIf(!postgresAvailable)("a task that finishes while its process stops still gets its terminal notifications", async () => {
    const env = await storeEnv("postgres", "mcp_stop_notify")
    try {
      const first = await startProcess(env, await freePort())
      service = first
      const url = `${first.baseUrl}/mcp`
      const session = await openSession(url, { headers: USER })
      const stream = await fetch(url, { headers: headersFor({ session, accept: "text/event-stream", headers: USER }) })
      const [priming] = await readEvents(stream, 1)
      const created = await messageOf(await post(url, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "demo.sleep", arguments: { ms: 6000 }, task: {}, _meta: { progressToken: "p1" } }
      }, { session, headers: USER }))
      const taskId = (created.result as { task: { taskId: string } }).task.taskId
      await new Promise((resolve) => setTimeout(resolve, 300))
      // The stop lets the running sleep finish (within its 10 s).
      await first.stop()
      expect(first.process.exitCode).toBe(0)
      const second = await startProcess(env, await freePort())
      service = second
      const resumed = await fetch(`${second.baseUrl}/mcp`, {
        headers: headersFor({ session, accept: "text/event-stream", headers: { ...USER, "last-event-id": priming!.id! } })
      })
      const messages = (await readEvents(resumed, 6, 5000)).slice(1).map((e) => JSON.parse(e.data) as { method: string; params: Record<string, unknown> })
      expect(messages.map((m) => m.method)).toEqual([
        "notifications/progress",
        "notifications/progress",
        "notifications/progress",
        "notifications/tasks/status"
      ])
      expect(messages[3]!.params).toMatchObject({ taskId, status: "completed" })
      await second.stop()
    } finally {
      if (env.SERVICE_DATABASE_URL !== undefined) await dropTestDatabase(env.SERVICE_DATABASE_URL)
    }
  }, 60_000)
})
