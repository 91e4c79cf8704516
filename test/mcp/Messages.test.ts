/**
 * What a POST body to `/mcp` must be (MCP 2025-11-25, "Transports" and "Lifecycle"; JSON-RPC 2.0
 * section 5.1): one JSON-RPC message, not a batch (batches were dropped in 2025-06-18, and are
 * kept for sessions of older versions); valid JSON that is not a JSON-RPC message is -32600
 * Invalid Request, not a parse error; `initialize` must be a request; params a method's schema
 * refuses are -32602 Invalid params with a short message, on the JSON and the SSE paths alike.
 * And a session whose requests leave out `MCP-Protocol-Version` is still answered at its own
 * version (the SSE priming event of 2025-11-25).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type GatewayUnderTest, openedEventId, startGateway } from "./support/Gateway.ts"
import { initializeMessage, messageOf, openSession, parseSse, post } from "./support/Raw.ts"

const JSON_ONLY = "application/json"

/** The JSON-RPC messages of an answer: a JSON array, or the events of an SSE stream. */
const messagesOf = async (response: Response): Promise<ReadonlyArray<unknown>> => {
  const text = await response.text()
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    return parseSse(text).filter((event) => event.data !== "").map((event) => JSON.parse(event.data) as unknown)
  }
  return JSON.parse(text) as ReadonlyArray<unknown>
}

describe("/mcp messages", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw.close())

  it("refuses a batch with 400 and -32600 at 2025-11-25, and still serves one at 2025-03-26", async () => {
    const session = await openSession(gw.url)
    const batch = [{ jsonrpc: "2.0", id: 4, method: "ping" }, { jsonrpc: "2.0", id: 5, method: "tools/list" }]
    for (const accept of [JSON_ONLY, "application/json, text/event-stream"]) {
      const refused = await post(gw.url, batch, { session, accept })
      expect(refused.status).toBe(400)
      expect(await refused.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    }
    const empty = await post(gw.url, [], { session, accept: JSON_ONLY })
    expect(empty.status).toBe(400)
    expect(await empty.json()).toMatchObject({ error: { code: -32600 } })

    const old = await openSession(gw.url, { protocol: "2025-03-26" })
    const served = await post(gw.url, batch, { session: old, version: "2025-03-26", accept: JSON_ONLY })
    expect(served.status).toBe(200)
    const answers = await served.json() as Array<{ id: number }>
    expect(answers.map((a) => a.id).toSorted()).toEqual([4, 5])
  })

  // Outside audit: a batch with one member that is no message was refused whole (400, -32600);
  // JSON-RPC 2.0 section 6 answers such a member with its own error and the others as usual.
  it("answers a batch member that is no message with its own -32600 and the other members as usual, at 2025-03-26", async () => {
    const old = await openSession(gw.url, { protocol: "2025-03-26" })
    const options = { session: old, version: "2025-03-26" }
    const invalid = { jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.any(String) } }
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" }
    const json = await post(gw.url, [ping, { foo: 1 }], { ...options, accept: JSON_ONLY })
    expect(json.status).toBe(200)
    expect(json.headers.get("content-type")).toMatch(/^application\/json/)
    expect(await json.json()).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }, invalid])

    const sse = await post(gw.url, [ping, { foo: 1 }], options)
    expect(sse.status).toBe(200)
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(await messagesOf(sse)).toEqual([{ jsonrpc: "2.0", id: 1, result: {} }, invalid])

    // No valid request among them: the errors alone; `[]` stays one error, not an array.
    for (const accept of [JSON_ONLY, "application/json, text/event-stream"]) {
      const none = await messagesOf(await post(gw.url, [{ foo: 1 }, 5, { jsonrpc: "2.0", method: "notifications/initialized" }], { ...options, accept }))
      expect(none, accept).toEqual([invalid, invalid])
      const only = await post(gw.url, [{ foo: 1 }, [ping]], { ...options, accept })
      expect(only.status).toBe(200)
      expect(await messagesOf(only), accept).toEqual([invalid, invalid])
    }
    const empty = await post(gw.url, [], { ...options, accept: JSON_ONLY })
    expect(empty.status).toBe(400)
    expect(await empty.json()).toMatchObject({ id: null, error: { code: -32600 } })
    // At 2025-11-25 a batch is refused whole, whatever its members.
    const current = await openSession(gw.url)
    const refused = await post(gw.url, [ping, { foo: 1 }], { session: current, accept: JSON_ONLY })
    expect(refused.status).toBe(400)
    expect(await refused.json()).toMatchObject({ id: null, error: { code: -32600 } })
  })

  // Outside audit: a batch of one request (or of requests answered once) came back as a bare
  // object, as the SDK answers a single message; JSON-RPC 2.0 section 6 answers a batch with an
  // array, whatever its length.
  it("answers a batch with an array even when it holds one request, at 2025-03-26", async () => {
    const old = await openSession(gw.url, { protocol: "2025-03-26" })
    const options = { session: old, version: "2025-03-26", accept: JSON_ONLY }
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" }
    const pong = { jsonrpc: "2.0", id: 1, result: {} }
    const one = await post(gw.url, [ping], options)
    expect(one.status).toBe(200)
    expect(await one.json()).toEqual([pong])
    const withNotification = await post(gw.url, [ping, { jsonrpc: "2.0", method: "notifications/initialized" }], options)
    expect(await withNotification.json()).toEqual([pong])
    // A batch of notifications alone is still 202 with no body, as for one notification.
    const notifications = await post(gw.url, [{ jsonrpc: "2.0", method: "notifications/initialized" }], options)
    expect(notifications.status).toBe(202)
    // A single message is still answered with the bare object.
    const single = await post(gw.url, ping, options)
    expect(await single.json()).toEqual(pong)
  })

  // Outside audit: an initialize inside a batch was refused as "initialize must be a request, with
  // an id" when it had one; MCP 2025-03-26 says initialize is never part of a batch.
  it("says an initialize in a batch is refused for being in a batch", async () => {
    const response = await post(gw.url, [initializeMessage("2025-03-26")], { accept: JSON_ONLY })
    expect(response.status).toBe(400)
    const answer = await response.json() as { error: { code: number; message: string } }
    expect(answer.error.code).toBe(-32600)
    expect(answer.error.message).toMatch(/batch/)
    expect(answer.error.message).not.toMatch(/with an id/)
  })

  it("answers valid JSON that is not a JSON-RPC message with 400 and -32600, not a parse error", async () => {
    const session = await openSession(gw.url)
    const bodies: ReadonlyArray<unknown> = [
      { id: 1, method: "ping" },
      { jsonrpc: "1.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", id: {}, method: "ping" },
      { jsonrpc: "2.0", id: 1, method: 5 },
      "hi",
      5,
      null
    ]
    for (const body of bodies) {
      const response = await post(gw.url, JSON.stringify(body), { session, accept: JSON_ONLY })
      expect(response.status, JSON.stringify(body)).toBe(400)
      expect(await response.json(), JSON.stringify(body)).toMatchObject({ jsonrpc: "2.0", error: { code: -32600 } })
    }
    // Not JSON at all is still the parse error.
    const unparsable = await post(gw.url, "{nope", { session, accept: JSON_ONLY })
    expect(await unparsable.json()).toMatchObject({ error: { code: -32700 } })
  })

  // Outside audit: an integer id past 2^53 - 1 was read as the nearest double, so the answer
  // carried another id than the request's, and two ids one apart shared the default idempotency
  // key `mcp:<session>:<id>` (the second call got the first's execution, or an isError).
  it("refuses an integer id that a double cannot hold exactly with 400 and -32600, and runs nothing", async () => {
    const session = await openSession(gw.url)
    for (const id of ["9007199254740992", "9007199254740993", "-9007199254740993", "12345678901234567890123"]) {
      const text = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"demo.echo","arguments":{"id":"${id}"}}}`
      const response = await post(gw.url, text, { session, accept: JSON_ONLY, headers: { "x-service-user-id": "user_1" } })
      expect(response.status, id).toBe(400)
      const answer = await response.json() as { id: unknown; error: { code: number; message: string } }
      expect(answer, id).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
      expect(answer.error.message).toMatch(/integer id/)
    }
    const listed = await (await gw.service.fetch("/v1/executions?tool=demo.echo&userId=user_1")).json() as { executions: ReadonlyArray<{ input: unknown }> }
    expect(listed.executions.map((record) => record.input)).toEqual([])
    // The largest exact integers are ids like any other.
    for (const id of [9007199254740991, -9007199254740991]) {
      const response = await post(gw.url, { jsonrpc: "2.0", id, method: "ping" }, { session, accept: JSON_ONLY })
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ jsonrpc: "2.0", id, result: {} })
    }
  })

  it("refuses initialize sent as a notification, and opens no session for it", async () => {
    const { id: _id, ...notification } = initializeMessage()
    const response = await post(gw.url, notification, { accept: JSON_ONLY })
    expect(response.status).toBe(400)
    expect(response.headers.get("mcp-session-id")).toBeNull()
    expect(await response.json()).toMatchObject({ error: { code: -32600 } })
  })

  it("answers params a method refuses with -32602 and a short message, as JSON and as SSE", async () => {
    const session = await openSession(gw.url)
    const calls: ReadonlyArray<Record<string, unknown>> = [
      { method: "tasks/get", params: {} },
      { method: "tasks/result", params: { taskId: 5 } },
      { method: "tasks/cancel" },
      { method: "tools/call", params: { arguments: {} } },
      { method: "tools/call", params: { name: "demo.echo", arguments: [1] } },
      { method: "tools/call", params: { name: "demo.echo", arguments: {}, task: { ttl: "x" } } },
      { method: "tools/call" }
    ]
    let id = 100
    for (const call of calls) {
      for (const accept of [JSON_ONLY, "application/json, text/event-stream"]) {
        const message = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: ++id, ...call }, { session, accept }))
        const error = message.error as { code: number; message: string } | undefined
        expect(error?.code, `${JSON.stringify(call)} ${accept}`).toBe(-32602)
        expect(message.id).toBe(id)
        expect(error!.message.length).toBeLessThan(200)
        expect(error!.message).not.toMatch(/"code":|\[\s*\{/)
      }
    }
  })

  // Outside audit: with both types accepted, the -32602 of params a schema refuses came back as
  // plain JSON while an unknown tool or a bad cursor came back as SSE (the spec: "If Accept
  // includes text/event-stream, the reply is an SSE stream").
  it("answers every JSON-RPC error to a request in a session as SSE when Accept lists text/event-stream", async () => {
    const session = await openSession(gw.url)
    const requests: ReadonlyArray<readonly [Record<string, unknown>, number]> = [
      [{ method: "tasks/get", params: { taskId: 5 } }, -32602],
      [{ method: "tools/call", params: { name: 5, arguments: {} } }, -32602],
      [{ method: "tools/call", params: { name: "demo.echo", arguments: {}, task: { ttl: "x" } } }, -32602],
      [{ method: "tools/call", params: { name: "nope.x", arguments: {} } }, -32602],
      [{ method: "tools/list", params: { cursor: "c" } }, -32602],
      [{ method: "nope/nope" }, -32601]
    ]
    let id = 200
    for (const [request, code] of requests) {
      const response = await post(gw.url, { jsonrpc: "2.0", id: ++id, ...request }, { session })
      const what = JSON.stringify(request)
      expect(response.status, what).toBe(200)
      expect(response.headers.get("content-type"), what).toMatch(/^text\/event-stream/)
      expect(response.headers.get("mcp-session-id"), what).toBe(session)
      const events = parseSse(await response.text())
      expect(events[0], what).toMatchObject({ data: "" })
      expect(await openedEventId(gw, session, events[0]!.id), what).toMatch(/^\d+:\d+:p[A-Za-z0-9_-]+\.0$/)
      expect(events, what).toHaveLength(2)
      expect(await openedEventId(gw, session, events[1]!.id), what).toMatch(/^\d+:\d+:p[A-Za-z0-9_-]+\.1$/)
      expect(JSON.parse(events[1]!.data), what).toMatchObject({ jsonrpc: "2.0", id, error: { code } })
    }
    // A session of a version without tasks: its -32601 for a tasks method too (no priming event
    // before 2025-11-25, as the SDK sends none).
    const old = await openSession(gw.url, { protocol: "2025-06-18" })
    const response = await post(gw.url, { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { taskId: "exe_x" } }, { session: old, version: "2025-06-18" })
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const events = parseSse(await response.text())
    expect(events.map((event) => JSON.parse(event.data) as unknown)).toEqual([{ jsonrpc: "2.0", id: 1, error: { code: -32601, message: expect.any(String) } }])
  })

  it("answers a session at its own version when MCP-Protocol-Version is left out: the SSE priming event", async () => {
    const session = await openSession(gw.url)
    const response = await post(gw.url, { jsonrpc: "2.0", id: 9, method: "tools/list" }, { session, version: null })
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const events = parseSse(await response.text())
    expect(events[0]).toMatchObject({ data: "" })
    expect(events[0]!.id).toBeDefined()
  })

  // Outside audit: 10,000 levels of arrays overflowed the stack in the gateway's message check (a
  // retryable 500 "Internal error."), and a client's response nested 100,000 levels deep was a
  // -32700 whose data was the RangeError; 8,000 levels were a 400 -32600.
  it("refuses a body nested deeper than 512 levels with 400 and -32600 before parsing, with or without a session", async () => {
    const session = await openSession(gw.url)
    const arrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
    const deepResult = `{"jsonrpc":"2.0","id":1,"result":${'{"d":'.repeat(100_000)}{}${"}".repeat(100_000)}}`
    const deepData = `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":${"[".repeat(100_000)}${"]".repeat(100_000)}}}`
    const deepParams = `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${"[".repeat(600)}${"]".repeat(600)}}}`
    const bodies = [arrays(10_000), arrays(8_000), arrays(513), deepResult, deepData, deepParams]
    for (const body of bodies) {
      for (const options of [{ accept: JSON_ONLY }, { session, accept: JSON_ONLY }, { session }]) {
        const what = `${body.slice(0, 40)} (${body.length}) ${JSON.stringify(options)}`
        const response = await post(gw.url, body, options)
        expect(response.status, what).toBe(400)
        expect(response.headers.get("content-type"), what).toMatch(/^application\/json/)
        const answer = await response.json() as { id: unknown; error: { code: number; message: string; data?: unknown } }
        expect(answer, what).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.stringContaining("512") } })
        expect(answer.error.data, what).toBeUndefined()
        expect(JSON.stringify(answer), what).not.toMatch(/RangeError|stack/i)
      }
    }
    // 512 levels are read as usual: a batch of batches is still no JSON-RPC message.
    const within = await post(gw.url, arrays(512), { session, accept: JSON_ONLY })
    expect(within.status).toBe(400)
    expect(await within.json()).toMatchObject({ id: null, error: { code: -32600, message: expect.not.stringContaining("512") } })
  })

  it("keeps arguments nested past 64 levels (and within 512) an isError result, as before", async () => {
    const session = await openSession(gw.url, { headers: { "x-service-user-id": "user_1" } })
    for (const levels of [100, 500]) {
      const args = `{"v":${"[".repeat(levels)}${"]".repeat(levels)}}`
      const body = `{"jsonrpc":"2.0","id":${levels},"method":"tools/call","params":{"name":"demo.echo","arguments":${args}}}`
      for (const accept of [JSON_ONLY, "application/json, text/event-stream"]) {
        const response = await post(gw.url, body, { session, accept, headers: { "x-service-user-id": "user_1" } })
        expect(response.status, `${levels} ${accept}`).toBe(200)
        const answer = await messageOf(response) as { id: number; result: { isError?: boolean; content: Array<{ text: string }> } }
        expect(answer.id).toBe(levels)
        expect(answer.result.isError, `${levels} ${accept}`).toBe(true)
        expect(answer.result.content[0]!.text).toContain("nested deeper than 64 levels")
      }
    }
  })

  it("answers the tasks methods with -32601 in a session of a version without tasks", async () => {
    const old = await openSession(gw.url, { protocol: "2025-06-18" })
    for (const method of ["tasks/get", "tasks/result", "tasks/cancel"]) {
      const message = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: 1, method, params: { taskId: "exe_x" } }, { session: old, version: "2025-06-18", accept: JSON_ONLY }))
      expect(message.error, method).toMatchObject({ code: -32601 })
    }
    const current = await openSession(gw.url)
    const found = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: 1, method: "tasks/get", params: { taskId: "exe_x" } }, { session: current, accept: JSON_ONLY }))
    expect(found.error).toMatchObject({ code: -32602 })
  })
})
