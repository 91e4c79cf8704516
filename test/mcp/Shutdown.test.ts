/**
 * A `tasks/result` waiting while its process stops (SIGTERM) must not say the task expired: the
 * task is still within its time to live and readable elsewhere or after a restart, and a client
 * takes -32602 as final. It is answered as any request the stop cuts short: -32000 "The request
 * was cancelled." (outside audit: it answered -32602 "expired before it finished").
 */
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { messageOf, openSession, post } from "./support/Raw.ts"

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
})
