/**
 * `/mcp` at the HTTP level (spec, "MCP gateway"; decisions.md section 7): answers by `Accept`,
 * the session header, protocol versions, authentication, sessions bound to their identity,
 * transport security, the body ceiling and the standard rate limit.
 */
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KEY, OTHER_KEY, PINNED_KEY } from "../support/Service.ts"
import { type GatewayUnderTest, openedEventId, startGateway } from "./support/Gateway.ts"
import { headersFor, initializeMessage, messageOf, openSession, parseSse, post, VERSION } from "./support/Raw.ts"

const LIST = { jsonrpc: "2.0", id: 7, method: "tools/list", params: {} }

describe("the /mcp transport", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_BASE_URL: "http://localhost:8080", SERVICE_MCP_ALLOWED_ORIGINS: "https://app.example.com" })
  })
  afterAll(() => gw.close())

  it("answers initialize with JSON when Accept has no text/event-stream, and issues a session id", async () => {
    const response = await post(gw.url, initializeMessage(), { accept: "application/json" })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^application\/json/)
    expect(response.headers.get("mcp-session-id")).toMatch(/^mcps_[0-9a-z]{32}$/)
    expect(response.headers.get("request-id")).toMatch(/^req_/)
    const message = await response.json() as { result: { protocolVersion: string; capabilities: Record<string, unknown> } }
    expect(message.result.protocolVersion).toBe(VERSION)
    expect(message.result.capabilities).toMatchObject({ tasks: { requests: { tools: { call: {} } } }, tools: { listChanged: true } })
  })

  it("answers with SSE that starts with a priming event when Accept lists text/event-stream", async () => {
    const session = await openSession(gw.url)
    const response = await post(gw.url, LIST, { session })
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/)
    expect(response.headers.get("mcp-session-id")).toBe(session)
    const events = parseSse(await response.text())
    expect(events[0]).toMatchObject({ data: "" })
    expect(await openedEventId(gw, session, events[0]!.id)).toMatch(/^\d+:\d+:p[A-Za-z0-9_-]+\.0$/)
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length)
    const last = JSON.parse(events.at(-1)!.data) as { id: number; result: { tools: Array<unknown> } }
    expect(last.id).toBe(7)
    expect(last.result.tools.length).toBeGreaterThan(2)
  })

  it("refuses a missing or bad key with 401, the envelope and WWW-Authenticate: Bearer", async () => {
    for (const key of [null, "not_a_real_key_at_all_0001"]) {
      const response = await post(gw.url, initializeMessage(), { key })
      expect(response.status).toBe(401)
      expect(response.headers.get("www-authenticate")).toBe("Bearer")
      const body = await response.json() as { error: { code: string; retryable: boolean }; requestId: string }
      expect(body.error.code).toBe(key === null ? "auth_missing" : "auth_expired")
      expect(body.error.retryable).toBe(false)
      expect(body.requestId).toBe(response.headers.get("request-id"))
    }
  })

  it("needs the session header after initialize (400) and answers 404 for an unknown session", async () => {
    const missing = await post(gw.url, LIST, { version: VERSION })
    expect(missing.status).toBe(400)
    const unknown = await post(gw.url, LIST, { session: "mcps_00000000000000000000000000000000" })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } })
    const malformed = await post(gw.url, LIST, { session: "not-a-session" })
    expect(malformed.status).toBe(404)
  })

  // MCP "Session Management": a new session starts with an initialize sent without a session id.
  // One sent with an id (known or not) opens nothing, as the SDK's own transport answers.
  it("refuses initialize sent with a session id (400, -32600) and opens no session", async () => {
    const session = await openSession(gw.url)
    for (const id of [session, "mcps_00000000000000000000000000000000"]) {
      const again = await post(gw.url, initializeMessage(undefined, undefined, 8), { session: id })
      expect(again.status).toBe(400)
      expect(again.headers.get("mcp-session-id")).toBeNull()
      // The request's id is known, so the error carries it (JSON-RPC 2.0: null only when it is not).
      expect(await again.json()).toMatchObject({ jsonrpc: "2.0", id: 8, error: { code: -32600 } })
    }
    // The first session is untouched.
    expect((await post(gw.url, LIST, { session })).status).toBe(200)
  })

  it("answers 404 to another key, another project's key or another user than the session's", async () => {
    const session = await openSession(gw.url, { headers: { "x-service-user-id": "user_1" } })
    expect((await post(gw.url, LIST, { session, headers: { "x-service-user-id": "user_1" } })).status).toBe(200)
    expect((await post(gw.url, LIST, { session, key: PINNED_KEY })).status).toBe(404)
    expect((await post(gw.url, LIST, { session, key: OTHER_KEY })).status).toBe(404)
    expect((await post(gw.url, LIST, { session, headers: { "x-service-user-id": "user_2" } })).status).toBe(404)
  })

  it("ends a session with DELETE; the session is 404 afterwards", async () => {
    const session = await openSession(gw.url)
    const deleted = await fetch(gw.url, { method: "DELETE", headers: headersFor({ session }) })
    expect(deleted.status).toBe(204)
    expect((await post(gw.url, LIST, { session })).status).toBe(404)
    expect((await fetch(gw.url, { method: "DELETE", headers: headersFor({ session }) })).status).toBe(404)
  })

  it("answers with the standard reason phrase, as every other route does", async () => {
    const statusLine = (method: string, headers: Record<string, string>, body?: string) =>
      new Promise<string>((resolve, reject) => {
        const sent = httpRequest(gw.url, { method, headers }, (response) => {
          response.resume()
          resolve(`${response.statusCode} ${response.statusMessage}`)
        })
        sent.on("error", reject)
        sent.end(body)
      })
    const session = await openSession(gw.url)
    const headers = Object.fromEntries(headersFor({ session }).entries())
    // An SSE answer, and one without a body.
    expect(await statusLine("POST", { ...headers, "content-type": "application/json" }, JSON.stringify(LIST))).toBe("200 OK")
    expect(await statusLine("DELETE", headers)).toBe("204 No Content")
  })

  it("checks MCP-Protocol-Version against the session's version", async () => {
    const session = await openSession(gw.url)
    expect((await post(gw.url, LIST, { session, version: "2025-06-18" })).status).toBe(400)
    expect((await post(gw.url, LIST, { session, version: "1999-01-01" })).status).toBe(400)
    expect((await post(gw.url, LIST, { session, version: null })).status).toBe(200)
  })

  it("answers an older protocol version with that version and no tasks", async () => {
    const response = await post(gw.url, initializeMessage("2025-06-18"), { accept: "application/json" })
    const message = await response.json() as { result: { protocolVersion: string; capabilities: Record<string, unknown> } }
    expect(message.result.protocolVersion).toBe("2025-06-18")
    expect(message.result.capabilities.tasks).toBeUndefined()
    const session = response.headers.get("mcp-session-id")!
    const listed = await messageOf(await post(gw.url, LIST, { session, version: "2025-06-18" }))
    const tools = (listed.result as { tools: Array<{ execution?: unknown }> }).tools
    expect(tools.every((tool) => tool.execution === undefined)).toBe(true)
    // A task-augmented call is processed as a plain one at that version.
    const call = await messageOf(await post(gw.url, {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { name: "demo.echo", arguments: { a: 1 }, task: { ttl: 60_000 }, _meta: { "dev.service/userId": "user_1" } }
    }, { session, version: "2025-06-18" }))
    expect(call.result).toMatchObject({ structuredContent: { a: 1 } })
  })

  it("refuses a foreign Origin with 403 and lets the base URL's and the configured ones pass", async () => {
    const refused = await post(gw.url, initializeMessage(), { headers: { origin: "https://evil.example" } })
    expect(refused.status).toBe(403)
    expect(await refused.json()).toMatchObject({ error: { code: "auth_insufficient_scope" } })
    for (const origin of ["http://localhost:8080", "https://app.example.com"]) {
      expect((await post(gw.url, initializeMessage(), { headers: { origin } })).status).toBe(200)
    }
  })

  it("answers an allowed origin's CORS preflight and exposes the session id to it", async () => {
    const origin = "https://app.example.com"
    const preflight = await fetch(gw.url, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST" } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get("access-control-allow-origin")).toBe(origin)
    expect(preflight.headers.get("access-control-allow-headers")).toContain("mcp-session-id")
    const response = await post(gw.url, initializeMessage(), { headers: { origin } })
    expect(response.headers.get("access-control-allow-origin")).toBe(origin)
    expect(response.headers.get("access-control-expose-headers")).toContain("mcp-session-id")
    const foreign = await fetch(gw.url, { method: "OPTIONS", headers: { origin: "https://evil.example" } })
    expect(foreign.status).toBe(403)
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull()
  })

  it("refuses a non-loopback Host when the service is bound to loopback (DNS rebinding)", async () => {
    const { request } = await import("node:http")
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(gw.url)
      const req = request({ host: url.hostname, port: url.port, path: "/mcp", method: "POST", headers: { host: "rebound.example:8080", "content-type": "application/json", accept: "application/json" } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on("error", reject)
      req.end(JSON.stringify(initializeMessage()))
    })
    expect(status).toBe(403)
  })

  it("serves any Host when the service listens on the network: clients name it as they reach it, and send no Origin", async () => {
    const open = await startGateway({ SERVICE_HOST: "0.0.0.0", SERVICE_BASE_URL: "http://localhost:8080" })
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const url = new URL(open.url)
        const req = httpRequest({ host: "127.0.0.1", port: url.port, path: "/mcp", method: "POST", headers: { host: `mcp-service.internal:${url.port}`, authorization: `Bearer ${KEY}`, "content-type": "application/json", accept: "application/json, text/event-stream" } }, (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        })
        req.on("error", reject)
        req.end(JSON.stringify(initializeMessage()))
      })
      expect(status).toBe(200)
    } finally {
      await open.close()
    }
  })

  it("refuses a body over 1 MiB with 413 before parsing it", async () => {
    const session = await openSession(gw.url)
    const big = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "demo.echo", arguments: { pad: "x".repeat(1024 * 1024) } } })
    const response = await post(gw.url, big, { session })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ error: { code: "invalid_input" } })
  })

  it("answers 400 to a body that is not JSON, 415 to another content type and 405 to other methods", async () => {
    const session = await openSession(gw.url)
    expect((await post(gw.url, "{not json", { session })).status).toBe(400)
    const text = await fetch(gw.url, { method: "POST", headers: { ...Object.fromEntries(headersFor({ session })), "content-type": "text/plain" }, body: "{}" })
    expect(text.status).toBe(415)
    const put = await fetch(gw.url, { method: "PUT", headers: headersFor({ session }), body: "{}" })
    expect(put.status).toBe(405)
    expect(put.headers.get("allow")).toBe("GET, POST, DELETE")
  })

  // A method the web Request cannot carry (fetch's forbidden methods; Node's parser takes TRACE):
  // the same 405 as PUT, not a bare 500 without a body or a Request-Id (outside audit).
  it("answers TRACE with the envelope's 405, with a key and without one", async () => {
    const trace = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
        const sent = httpRequest(gw.url, { method: "TRACE", headers }, (response) => {
          let body = ""
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => (body += chunk))
          response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }))
        })
        sent.on("error", reject)
        sent.end()
      })
    const session = await openSession(gw.url)
    for (const headers of [Object.fromEntries(headersFor({ session }).entries()), {}]) {
      const answer = await trace(headers)
      expect(answer.status).toBe(405)
      expect(answer.headers["allow"]).toBe("GET, POST, DELETE")
      expect(answer.headers["request-id"]).toMatch(/^req_/)
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "invalid_input", retryable: false }, requestId: answer.headers["request-id"] })
    }
  })

  it("refuses a pinned key whose user header names someone else (403)", async () => {
    const response = await post(gw.url, initializeMessage(), { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } })
    expect(response.status).toBe(403)
    expect(await response.json()).toMatchObject({ error: { code: "auth_insufficient_scope" } })
  })

  it("answers GET without text/event-stream with 406 and a GET of an unknown session with 404", async () => {
    const session = await openSession(gw.url)
    expect((await fetch(gw.url, { headers: headersFor({ session, accept: "application/json" }) })).status).toBe(406)
    expect((await fetch(gw.url, { headers: headersFor({ session: "mcps_00000000000000000000000000000000", accept: "text/event-stream" }) })).status).toBe(404)
  })

  // `q=0` says "not acceptable" (RFC 9110, 12.4.2): it used to count as asking for the stream.
  it("takes text/event-stream;q=0 as not accepting a stream: GET is 406, POST answers JSON", async () => {
    const session = await openSession(gw.url)
    const get = await fetch(gw.url, { headers: headersFor({ session, accept: "text/event-stream;q=0, application/json" }) })
    expect(get.status).toBe(406)
    await get.body?.cancel()
    for (const accept of ["application/json, text/event-stream;q=0", "application/json, text/event-stream; q=0.0"]) {
      const answer = await post(gw.url, { jsonrpc: "2.0", id: 7, method: "tools/list" }, { session, accept })
      expect(answer.status).toBe(200)
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
      expect(await answer.json()).toMatchObject({ id: 7, result: { tools: expect.any(Array) } })
    }
    // A positive weight (and any case) still asks for it.
    const stream = await post(gw.url, { jsonrpc: "2.0", id: 8, method: "tools/list" }, { session, accept: "application/json;q=0.9, Text/Event-Stream;q=0.5" })
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/)
    await stream.body?.cancel()
  })

  // Outside audit: a gzip body was a 400 -32700 parse error; /v1 answers a content coding 415.
  it("answers a content-encoded body 415, as /v1 does; identity passes", async () => {
    const session = await openSession(gw.url)
    const { gzipSync } = await import("node:zlib")
    const ping = JSON.stringify({ jsonrpc: "2.0", id: 13, method: "ping" })
    for (const coding of ["gzip", "br", "identity, gzip"]) {
      const refused = await post(gw.url, coding === "gzip" ? gzipSync(ping) : ping, { session, accept: "application/json", headers: { "content-encoding": coding } })
      expect(refused.status, coding).toBe(415)
      expect(await refused.json()).toMatchObject({ error: { code: "invalid_input", message: "The request body must not be content-encoded." } })
    }
    const plain = await post(gw.url, ping, { session, accept: "application/json", headers: { "content-encoding": "identity" } })
    expect(plain.status).toBe(200)
    expect(await plain.json()).toEqual({ jsonrpc: "2.0", id: 13, result: {} })
  })

  it("answers a body in a charset other than UTF-8 415, as /v1 does; UTF-8's labels pass", async () => {
    const session = await openSession(gw.url)
    for (const type of ["application/json; charset=latin1", "application/json; charset=utf-16"]) {
      const refused = await post(gw.url, { jsonrpc: "2.0", id: 11, method: "tools/list" }, { session, accept: "application/json", headers: { "content-type": type } })
      expect(refused.status, type).toBe(415)
      await refused.body?.cancel()
    }
    for (const type of ["application/json; charset=UTF-8", "application/json; charset=utf8"]) {
      const answer = await post(gw.url, { jsonrpc: "2.0", id: 12, method: "tools/list" }, { session, accept: "application/json", headers: { "content-type": type } })
      expect(answer.status, type).toBe(200)
      await answer.body?.cancel()
    }
  })

  it("answers a POST whose Accept takes neither JSON nor an event stream 406, as GET; wildcards and no Accept get JSON", async () => {
    const session = await openSession(gw.url)
    for (const accept of ["text/html", "application/xml, text/plain", "application/json;q=0", "application/json;q=0, */*"]) {
      const refused = await post(gw.url, { jsonrpc: "2.0", id: 9, method: "tools/list" }, { session, accept })
      expect(refused.status, accept).toBe(406)
      expect(await refused.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32000 } })
    }
    for (const accept of ["*/*", "application/*", "text/html, application/json"]) {
      const answer = await post(gw.url, { jsonrpc: "2.0", id: 10, method: "tools/list" }, { session, accept })
      expect(answer.status, accept).toBe(200)
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/)
      await answer.body?.cancel()
    }
  })
})

describe("the /mcp standard rate limit", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_RATE_LIMIT_REQUEST_BURST: "3", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" })
  })
  afterAll(() => gw.close())

  it("takes a token per request and answers 429 with the envelope and Retry-After when none is left", async () => {
    const statuses: Array<number> = []
    let last: Response | undefined
    for (let i = 0; i < 4; i++) {
      last = await post(gw.url, initializeMessage(), { accept: "application/json" })
      statuses.push(last.status)
      if (last.status === 200) expect(last.headers.get("ratelimit-limit")).toBe("3")
    }
    expect(statuses).toEqual([200, 200, 200, 429])
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    // The same words as /v1's refusal by the standard bucket (docs/api.md).
    expect(await last!.json()).toMatchObject({ error: { code: "rate_limited", retryable: true, message: "The project's rate limit is exhausted." } })
  })
})
