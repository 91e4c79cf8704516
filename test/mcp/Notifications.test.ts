/**
 * The session's GET stream (spec, "MCP notifications"; decisions.md section 7): tool-list
 * changes when the session user's connections are created, deleted or expire, event ids that
 * `Last-Event-ID` resumes from, one live stream per session, and its end with the session.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Redacted } from "effect"
import { ApiKeys } from "../../infra/access/ApiKeys.ts"
import { KEY, OTHER_KEY } from "../support/Service.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connect } from "./support/Clients.ts"
import { type GatewayUnderTest, openedEventId, sealedEventId, startGateway } from "./support/Gateway.ts"
import { headersFor, messageOf, openSession, parseSse, post, readEvents } from "./support/Raw.ts"

const createConnection = async (gw: GatewayUnderTest, userId: string, extra: Record<string, unknown> = {}) => {
  const response = await gw.service.fetch("/v1/connections", {
    method: "POST",
    json: { userId, toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb-2" }, scopes: ["chat:write"], ...extra }
  })
  expect(response.status).toBe(201)
  return (await response.json() as { connectionId: string }).connectionId
}

const eventually = async <A>(read: () => A, done: (value: A) => boolean, timeoutMs = 10_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = read()
    if (done(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const openStream = (gw: GatewayUnderTest, session: string, headers: Record<string, string> = {}) =>
  fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers }) })

describe("the session's GET stream", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw.close())

  it("sends tools/list_changed when a connection of the session's user is created or deleted, not for others", async () => {
    const mine = await connect(gw.url, { headers: { "x-service-user-id": "erin" } })
    const theirs = await connect(gw.url, { headers: { "x-service-user-id": "frank" } })
    let changes = 0
    let others = 0
    mine.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++)
    theirs.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void others++)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const connectionId = await createConnection(gw, "erin")
    expect(await eventually(() => changes, (n) => n === 1)).toBe(1)
    expect((await mine.client.listTools()).tools.map((t) => t.name)).toContain("slack.post_message")
    expect((await gw.service.fetch(`/v1/connections/${connectionId}`, { method: "DELETE" })).status).toBe(204)
    expect(await eventually(() => changes, (n) => n === 2)).toBe(2)
    expect((await mine.client.listTools()).tools.map((t) => t.name)).not.toContain("slack.post_message")
    expect(others).toBe(0)
    await mine.close()
    await theirs.close()
  })

  it("sends tools/list_changed when a connection of the session's user expires", async () => {
    const mine = await connect(gw.url, { headers: { "x-service-user-id": "gina" } })
    let changes = 0
    mine.client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++)
    await new Promise((resolve) => setTimeout(resolve, 300))
    await createConnection(gw, "gina", { expiresAt: new Date(Date.now() + 1500).toISOString() })
    expect(await eventually(() => changes, (n) => n === 1)).toBe(1)
    expect(await eventually(() => changes, (n) => n === 2, 5000)).toBe(2)
    expect((await mine.client.listTools()).tools.map((t) => t.name)).not.toContain("slack.post_message")
    await mine.close()
  })

  it("a stream resumed after a connection of the user expired while no stream was open sends tools/list_changed", async () => {
    const user = { "x-service-user-id": "ivy" }
    const session = await openSession(gw.url, { headers: user })
    const first = await openStream(gw, session, user)
    await createConnection(gw, "ivy", { expiresAt: new Date(Date.now() + 1000).toISOString() })
    // The creation's list_changed is read, then the stream closes before the expiry.
    const [, created] = await readEvents(first, 2)
    expect(JSON.parse(created!.data)).toMatchObject({ method: "notifications/tools/list_changed" })
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const resumed = await openStream(gw, session, { ...user, "last-event-id": created!.id! })
    const events = (await readEvents(resumed, 2, 2000)).slice(1)
    expect(events.map((e) => (JSON.parse(e.data) as { method: string }).method)).toEqual(["notifications/tools/list_changed"])
    // Its id is the stream's own (no log event), so it never repeats one the client saw.
    expect((await openedEventId(gw, session, events[0]!.id)).startsWith(`${await openedEventId(gw, session, created!.id)}:g`)).toBe(true)
  })

  it("gives each event a log position as id and replays what was missed from Last-Event-ID", async () => {
    const user = { "x-service-user-id": "hank" }
    const session = await openSession(gw.url, { headers: user })
    const first = await openStream(gw, session, user)
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const [priming] = await readEvents(first, 1)
    expect(priming).toMatchObject({ data: "" })
    // The priming event's id carries the stream's starting position and the stream's own tag.
    expect(await openedEventId(gw, session, priming!.id)).toMatch(/^\d+:\d+:g[A-Za-z0-9_-]+\.0$/)
    // While no stream is open: a connection, and a task with progress.
    await createConnection(gw, "hank")
    const call = await messageOf(await post(gw.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "demo.sleep", arguments: { ms: 200 }, task: {}, _meta: { progressToken: "p1" } }
    }, { session, headers: user }))
    const taskId = (call.result as { task: { taskId: string } }).task.taskId
    await new Promise((resolve) => setTimeout(resolve, 600))
    const resumed = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": priming!.id! } }) })
    const events = (await readEvents(resumed, 6)).slice(1).map((e) => ({ id: e.id, message: JSON.parse(e.data) as { method: string; params?: Record<string, unknown> } }))
    expect(events.map((e) => e.message.method)).toEqual([
      "notifications/tools/list_changed",
      "notifications/progress",
      "notifications/progress",
      "notifications/progress",
      "notifications/tasks/status"
    ])
    // Progress names its task (MCP 2025-11-25, "Tasks": related notifications carry the key);
    // the status notification does not ("SHOULD NOT": its params hold the task id already).
    const related = { "io.modelcontextprotocol/related-task": { taskId } }
    expect(events.slice(1, 4).map((e) => e.message.params)).toEqual([0, 1, 2].map((progress) =>
      expect.objectContaining({ progressToken: "p1", progress, total: 2, _meta: related })
    ))
    expect(events[4]!.message.params).toMatchObject({ taskId, status: "completed" })
    expect(events[4]!.message.params).not.toHaveProperty("_meta")
    const ids = events.map((e) => e.id!)
    expect(new Set(ids).size).toBe(ids.length)
    // From the last id on, nothing is sent again.
    const again = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": ids.at(-1)! } }) })
    const resumedAgain = await readEvents(again, 2, 500)
    expect(resumedAgain.length).toBe(1)
    // Its priming event resumes from the same place under an id of its own.
    expect(resumedAgain[0]!.id).not.toBe(ids.at(-1))
    expect((await openedEventId(gw, session, resumedAgain[0]!.id)).startsWith(`${await openedEventId(gw, session, ids.at(-1))}:g`)).toBe(true)
    const bad = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": "nonsense" } }) })
    expect(bad.status).toBe(400)
    // Outside audit: another session's id was taken as a place to resume from. Ids are the
    // session's (MCP: unique across the streams of its session): another's is none of them.
    const other = await openSession(gw.url, { headers: user })
    for (const id of [ids.at(-1)!, priming!.id!]) {
      const crossed = await fetch(gw.url, { headers: headersFor({ session: other, accept: "text/event-stream", headers: { ...user, "last-event-id": id } }) })
      expect(crossed.status).toBe(400)
      await crossed.body?.cancel()
    }
  })

  it("ends the stream when the session is deleted", async () => {
    const session = await openSession(gw.url)
    const stream = await openStream(gw, session)
    const reader = stream.body!.getReader()
    await reader.read()
    expect((await fetch(gw.url, { method: "DELETE", headers: headersFor({ session }) })).status).toBe(204)
    const end = await Promise.race([
      (async () => {
        while (!(await reader.read()).done) {
          // Drain until the end.
        }
        return "ended"
      })(),
      new Promise((resolve) => setTimeout(() => resolve("open"), 3000))
    ])
    expect(end).toBe("ended")
  })

  it("keeps one live stream per session: a newer one ends the older", async () => {
    const session = await openSession(gw.url)
    const older = await openStream(gw, session)
    const reader = older.body!.getReader()
    await reader.read()
    const newer = await openStream(gw, session)
    expect(newer.status).toBe(200)
    const end = await Promise.race([
      (async () => {
        while (!(await reader.read()).done) {
          // Drain until the end.
        }
        return "ended"
      })(),
      new Promise((resolve) => setTimeout(() => resolve("open"), 3000))
    ])
    expect(end).toBe("ended")
    await newer.body?.cancel()
  })

  it("never gives two events of a session the same id, and does not answer a POST stream's resumption with the GET stream's past", async () => {
    const user = { "x-service-user-id": "ivy" }
    const session = await openSession(gw.url, { headers: user })
    const seen: Array<string> = []
    const stream = await openStream(gw, session, user)
    const [priming] = await readEvents(stream, 1)
    seen.push(priming!.id!)
    // Two POST answers as SSE (one with progress), one after the other.
    const posts: Array<string> = []
    for (const id of [1, 2]) {
      const answer = await post(gw.url, {
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "demo.echo", arguments: { n: id }, _meta: { progressToken: `t${id}`, "dev.service/userId": "ivy" } }
      }, { session, headers: user })
      const events = parseSse(await answer.text())
      expect(events.length).toBeGreaterThan(2)
      posts.push(...events.map((e) => e.id!))
    }
    seen.push(...posts)
    // A connection (a log event on the GET stream), then a stream resumed from before it.
    await createConnection(gw, "ivy")
    const resumed = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": priming!.id! } }) })
    const replayed = await readEvents(resumed, 2)
    expect(JSON.parse(replayed[1]!.data)).toMatchObject({ method: "notifications/tools/list_changed" })
    seen.push(...replayed.map((e) => e.id!))
    expect(new Set(seen).size).toBe(seen.length)
    // Resuming a POST stream: no replay of the GET stream's list_changed, and no stream at all.
    const fromPost = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream", headers: { ...user, "last-event-id": posts[0]! } }) })
    expect(fromPost.status).toBe(405)
  })

  // MCP 2025-11-25, "Resumability": a resumption MUST NOT replay what another stream would have
  // carried, and a message goes out on one stream only. A POST stream's messages are not kept, so
  // it cannot be resumed: the GET is 405 (transport: a GET is answered with a stream or 405), and
  // the session's GET stream stays where it is.
  it("answers a POST stream's resumption 405, without a stream, and keeps the session's stream", async () => {
    const user = { "x-service-user-id": "jill" }
    const session = await openSession(gw.url, { headers: user })
    const main = await openStream(gw, session, user)
    const mainReader = main.body!.getReader()
    await mainReader.read()
    const failed = parseSse(await (await post(gw.url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "nope.x", arguments: {} } }, { session, headers: user })).text())
    const postId = failed.find((e) => e.id !== undefined)!.id!
    const resumption = await openStream(gw, session, { ...user, "last-event-id": postId })
    expect(resumption.status).toBe(405)
    expect(resumption.headers.get("content-type")).toContain("application/json")
    const body = await resumption.json() as { error: { code: number; message: string } }
    expect(body.error.code).toBe(-32000)
    expect(body.error.message).toMatch(/cannot be resumed/)
    await createConnection(gw, "jill")
    // The change reaches the session's stream, which the resumption did not end.
    const decoder = new TextDecoder()
    let text = ""
    while (!text.includes("list_changed")) {
      const next = await Promise.race([mainReader.read(), new Promise<{ done: true }>((resolve) => setTimeout(() => resolve({ done: true }), 5_000))])
      if (next.done) break
      text += decoder.decode(next.value)
    }
    expect(text).toContain("notifications/tools/list_changed")
    await mainReader.cancel()
  })

  // A revoked key opens nothing new (401); the stream it opened before must not go on carrying the
  // session's notifications either: it ends at its next check.
  it("ends a session's stream once the key that opened it is revoked", async () => {
    const made = await gw.service.runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.create({ projectId: "proj_test" })))
    const key = Redacted.value(made.key)
    const user = { "x-service-user-id": "rita" }
    const session = await openSession(gw.url, { key, headers: user })
    const stream = await fetch(gw.url, { headers: headersFor({ key, session, accept: "text/event-stream", headers: user }) })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    await reader.read()
    await gw.service.runtime.runPromise(Effect.flatMap(ApiKeys, (keys) => keys.revoke(made.record.keyId)))
    const ended = async () => {
      while (true) {
        const next = await reader.read()
        if (next.done) return true
      }
    }
    expect(await Promise.race([ended(), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 20_000))])).toBe(true)
    expect((await post(gw.url, { jsonrpc: "2.0", id: 9, method: "ping" }, { key, session, headers: user })).status).toBe(401)
  }, 30_000)

  it("gives ids that show no log position: another project's traffic cannot be read from them, and a made-up one is refused", async () => {
    // Outside audit: ids were log positions, which count every project's events, so a session
    // could watch how busy the whole service was by opening its stream now and then.
    const user = { "x-service-user-id": "olga" }
    const session = await openSession(gw.url, { headers: user })
    const [before] = await readEvents(await openStream(gw, session, user), 1)
    for (let n = 0; n < 5; n++) {
      const other = await gw.service.fetch("/v1/execute", { method: "POST", key: OTHER_KEY, json: { tool: "demo.echo", userId: "u", input: { n } } })
      expect(other.status).toBe(200)
    }
    const [after] = await readEvents(await openStream(gw, session, user), 1)
    for (const id of [before!.id!, after!.id!]) expect(id).not.toMatch(/\d+:\d+/)
    // A position spelled out is no id of this service; one the gateway gave resumes.
    const plain = await openedEventId(gw, session, after!.id)
    expect((await openStream(gw, session, { ...user, "last-event-id": plain })).status).toBe(400)
    expect((await openStream(gw, session, { ...user, "last-event-id": "0:0" })).status).toBe(400)
    const tampered = `${after!.id!.slice(0, -2)}${after!.id!.endsWith("AA") ? "BB" : "AA"}`
    expect((await openStream(gw, session, { ...user, "last-event-id": tampered })).status).toBe(400)
    expect((await openStream(gw, session, { ...user, "last-event-id": after!.id! })).status).toBe(200)
  })

  it("refuses a Last-Event-ID past the log's end, and resumes one from before the session without others' past", async () => {
    const user = { "x-service-user-id": "kim" }
    // A change of this user before the session exists.
    await createConnection(gw, "kim")
    const session = await openSession(gw.url, { headers: user })
    const future = await openStream(gw, session, { ...user, "last-event-id": await sealedEventId(gw, session, "999999999:999999") })
    expect(future.status).toBe(400)
    const fromStart = await openStream(gw, session, { ...user, "last-event-id": await sealedEventId(gw, session, "0:0") })
    expect(fromStart.status).toBe(200)
    const events = await readEvents(fromStart, 2, 1_000)
    expect(events.filter((e) => e.data !== "")).toEqual([])
  })

  // The SDK resumes a POST stream that ended with an error (it takes only a result for the end of
  // a call) by a GET with the POST stream's last id; that GET must not take the session's stream,
  // nor stay open: before, each error held a connection open and the 17th answer was 409.
  it("opens no more streams after error answers, however many, and gets each notification once", async () => {
    const gets: Array<number> = []
    const counting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      if ((init?.method ?? "GET") === "GET") gets.push(response.status)
      return response
    }
    const user = "lou"
    const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
      fetch: counting,
      requestInit: { headers: { authorization: `Bearer ${KEY}`, "x-service-user-id": user } }
    })
    const errors: Array<string> = []
    // The SDK reports through these callback properties; it has no addEventListener.
    // oxlint-disable-next-line unicorn/prefer-add-event-listener
    transport.onerror = (error) => void errors.push(error.message)
    const client = new Client({ name: "streams", version: "1.0.0" }, { capabilities: {} })
    // oxlint-disable-next-line unicorn/prefer-add-event-listener
    client.onerror = (error) => void errors.push(error.message)
    let changes = 0
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changes++)
    await client.connect(transport)
    await new Promise((resolve) => setTimeout(resolve, 500))
    for (let n = 0; n < 20; n++) await expect(client.callTool({ name: `nope.x${n}`, arguments: {} })).rejects.toThrow(/Unknown tool/)
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    // The session's stream, then one refused resumption per error answer: none left open.
    expect(gets[0]).toBe(200)
    expect(gets.slice(1)).toEqual(Array.from({ length: 20 }, () => 405))
    expect(errors).toEqual([])
    await createConnection(gw, user)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(changes).toBe(1)
    await transport.terminateSession()
    await client.close()
  })
})
