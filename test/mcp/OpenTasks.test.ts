/**
 * Tasks whose process is gone before their execution ends still get their terminal notifications
 * (outside audit: after a restart, tasks/get answered, but the GET stream never got the terminal
 * progress nor `notifications/tasks/status` of a task the restart interrupted or ran later; a UI
 * driven by progress showed "running" for ever). The process that starts takes them up from the
 * open-tasks view (mcp/OpenTasks.ts).
 */
import { afterAll, describe, expect, it } from "vitest"
import type { Env } from "../support/Config.ts"
import { dropTestDatabase, postgresAvailable, storeEnv } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { headersFor, messageOf, openSession, post, readEvents } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }

interface Note {
  readonly method: string
  readonly params: { readonly [key: string]: unknown }
}

/** The notifications about `taskId`, by the related-task key of progress or the status's own id. */
const about = (notes: ReadonlyArray<Note>, taskId: string): ReadonlyArray<string> =>
  notes.filter((note) => {
    const meta = note.params._meta as { [key: string]: { taskId?: string } } | undefined
    return note.params.taskId === taskId || meta?.["io.modelcontextprotocol/related-task"]?.taskId === taskId
  }).map((note) => note.method === "notifications/progress" ? `progress ${String(note.params.progress)}` : `status ${String(note.params.status)}`)

describe.skipIf(!postgresAvailable)("MCP tasks whose process is gone", () => {
  const services: Array<ChildService> = []
  afterAll(async () => {
    for (const service of services) await service.kill9().catch(() => undefined)
  })

  it("get their terminal progress and status from the process that starts next, once each", async () => {
    const env: Env = { ...(await storeEnv("postgres", "mcp_open_tasks")), SERVICE_LEASE_TTL_MS: "2000" }
    try {
      const first = await startProcess(env, await freePort())
      services.push(first)
      const url = `${first.baseUrl}/mcp`
      const session = await openSession(url, { headers: USER })
      const stream = await fetch(url, { headers: headersFor({ session, accept: "text/event-stream", headers: USER }) })
      const [priming] = await readEvents(stream, 1)
      const call = async (id: number, ms: number, token?: string) => {
        const message = await messageOf(await post(url, {
          jsonrpc: "2.0",
          id,
          method: "tools/call",
          params: { name: "demo.sleep", arguments: { ms }, task: {}, ...(token === undefined ? {} : { _meta: { progressToken: token } }) }
        }, { session, headers: USER }))
        return (message.result as { task: { taskId: string } }).task.taskId
      }
      // Four long sleeps fill the demo toolkit's cap of 4; the fifth waits for a permit.
      const long = await call(1, 60_000, "long")
      const others = [await call(2, 60_000), await call(3, 60_000), await call(4, 60_000)]
      const queued = await call(5, 200, "queued")
      await new Promise((resolve) => setTimeout(resolve, 500))
      await first.kill9()

      const second = await startProcess(env, await freePort())
      services.push(second)
      const resumed = await fetch(`${second.baseUrl}/mcp`, {
        headers: headersFor({ session, accept: "text/event-stream", headers: { ...USER, "last-event-id": priming!.id! } })
      })
      // Before the kill: long queued and running, queued queued. After: long's terminal progress and
      // status, three statuses, queued's running, terminal progress and status.
      const events = await readEvents(resumed, 1 + 3 + 2 + 3 + 3, 20_000)
      const notes = events.slice(1).map((event) => JSON.parse(event.data) as Note)
      expect(about(notes, long)).toEqual(["progress 0", "progress 1", "progress 2", "status failed"])
      for (const other of others) expect(about(notes, other)).toEqual(["status failed"])
      expect(about(notes, queued)).toEqual(["progress 0", "progress 1", "progress 2", "status completed"])
      expect(notes).toHaveLength(3 + 2 + 3 + 3)

      const task = await messageOf(await post(`${second.baseUrl}/mcp`, { jsonrpc: "2.0", id: 6, method: "tasks/get", params: { taskId: long } }, { session, headers: USER }))
      expect(task.result).toMatchObject({ taskId: long, status: "failed" })
      await second.stop()
    } finally {
      if (env.SERVICE_DATABASE_URL !== undefined) await dropTestDatabase(env.SERVICE_DATABASE_URL)
    }
  }, 60_000)
})
