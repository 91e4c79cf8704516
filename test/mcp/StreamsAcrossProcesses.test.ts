/**
 * One live GET stream per session across processes (MCP 2025-11-25, "Multiple Connections": a
 * message goes on one stream, never broadcast): a stream opened on another process ends the
 * older one at once, not at its next keep-alive. Both carried every notification for up to 15 s
 * (outside audit).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type ChildService, startPeers } from "../support/Service.ts"
import { headersFor, openSession, parseSse } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }

const openStream = (url: string, session: string) => fetch(url, { headers: headersFor({ session, accept: "text/event-stream", headers: USER }) })

/** Reads a stream until it ends or `ms` pass: its events and whether it ended. */
const readFor = async (response: Response, ms: number) => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  const deadline = Date.now() + ms
  let ended = false
  while (Date.now() < deadline) {
    const next = await Promise.race([
      reader.read(),
      new Promise<"waiting">((resolve) => setTimeout(() => resolve("waiting"), Math.max(1, deadline - Date.now())))
    ])
    if (next === "waiting") break
    if (next.done) {
      ended = true
      break
    }
    text += decoder.decode(next.value, { stream: true })
  }
  if (!ended) await reader.cancel().catch(() => undefined)
  return { events: parseSse(text).filter((event) => event.data !== ""), ended }
}

describe.skipIf(!postgresAvailable)("a session's GET streams on two processes", () => {
  let url: string
  let peers: readonly [ChildService, ChildService]
  beforeAll(async () => {
    url = await createTestDatabase("mcpstreams")
    peers = await startPeers({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") })
  }, 60_000)
  afterAll(async () => {
    for (const peer of peers ?? []) await peer.stop().catch(() => undefined)
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("a newer stream on the other process ends the older at once, and only the newer carries a notification", async () => {
    const [a, b] = peers
    const session = await openSession(`${a.baseUrl}/mcp`, { headers: USER })
    const older = await openStream(`${a.baseUrl}/mcp`, session)
    expect(older.status).toBe(200)
    const olderRead = readFor(older, 4_000)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const newer = await openStream(`${b.baseUrl}/mcp`, session)
    expect(newer.status).toBe(200)
    const newerRead = readFor(newer, 4_000)
    await new Promise((resolve) => setTimeout(resolve, 500))
    const created = await b.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "user_1", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb-3" }, scopes: ["chat:write"] }
    })
    expect(created.status).toBe(201)
    const [olderSaw, newerSaw] = await Promise.all([olderRead, newerRead])
    expect(olderSaw.ended).toBe(true)
    const changes = (events: ReadonlyArray<{ readonly data: string }>) => events.filter((event) => event.data.includes("notifications/tools/list_changed")).length
    expect([changes(olderSaw.events), changes(newerSaw.events)]).toEqual([0, 1])
  }, 60_000)
})
