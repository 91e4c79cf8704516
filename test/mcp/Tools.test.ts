/**
 * initialize, tools/list and tools/call through the official SDK client (spec, "MCP gateway";
 * decisions.md section 7): capabilities, discovery modes, descriptors, the built-in tools,
 * results and errors, user precedence, call metadata and idempotency, async-by-nature tools.
 */
import { McpError, type Tool } from "@modelcontextprotocol/sdk/types.js"
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PINNED_KEY } from "../support/Service.ts"
import { connect } from "./support/Clients.ts"
import { type GatewayUnderTest, startGateway } from "./support/Gateway.ts"
import { messageOf, openSession, post } from "./support/Raw.ts"

const USER = { "x-service-user-id": "user_1" }

type Result = { isError?: boolean; structuredContent?: unknown; content: Array<{ type: string; text?: string }>; _meta?: Record<string, unknown> }

const errorOf = (result: Result) => result._meta?.["dev.service/error"] as { code: string; retryable: boolean; retryAfter?: number } | undefined
const executionOf = (result: Result) => result._meta?.["dev.service/execution"] as { executionId: string; status: string; tool: string } | undefined

const rpcCode = async (promise: Promise<unknown>) => {
  try {
    await promise
    return undefined
  } catch (error) {
    return error instanceof McpError ? error.code : String(error)
  }
}

describe("tools in catalog mode", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw.close())

  it("advertises tasks and lists taskSupport only when tasks were negotiated (capability or its experimental alias)", async () => {
    for (const tasks of ["tasks", "experimental"] as const) {
      const { client, close } = await connect(gw.url, { tasks })
      expect(client.getServerCapabilities()?.tasks).toMatchObject({ requests: { tools: { call: {} } } })
      const tools = (await client.listTools()).tools
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      expect(byName.get("demo.sleep")?.execution).toEqual({ taskSupport: "required" })
      expect(byName.get("demo.echo")?.execution).toEqual({ taskSupport: "optional" })
      expect(byName.get("service.execute_tool")?.execution).toEqual({ taskSupport: "optional" })
      await close()
    }
    const { client, close } = await connect(gw.url, { tasks: "none" })
    expect((await client.listTools()).tools.every((tool) => tool.execution === undefined)).toBe(true)
    await close()
  })

  // MCP 2025-11-25, "Pagination": invalid cursors SHOULD be -32602. tools/list has one page and
  // issues no cursor, so none is valid.
  it("refuses a tools/list cursor with -32602, since it issues none", async () => {
    const { client, close } = await connect(gw.url)
    const listed = await client.listTools()
    expect(listed.nextCursor).toBeUndefined()
    expect(await rpcCode(client.listTools({ cursor: "zzz" }))).toBe(-32602)
    expect(await rpcCode(client.listTools({ cursor: "" }))).toBe(-32602)
    await close()
  })

  it("lists the built-ins without and provider tools with _meta[\"dev.service/tool\"], under canonical names", async () => {
    const { client, close } = await connect(gw.url)
    const tools = (await client.listTools()).tools
    const names = tools.map((tool) => tool.name)
    expect(names.slice(0, 2)).toEqual(["service.search_tools", "service.execute_tool"])
    for (const tool of tools.slice(0, 2)) expect(tool._meta).toBeUndefined()
    const echo = tools.find((tool) => tool.name === "demo.echo") as Tool
    expect(echo._meta?.["dev.service/tool"]).toMatchObject({ toolkit: "demo", capability: "demo", version: "1.0.0", wireName: "demo__echo" })
    expect(echo.inputSchema.type).toBe("object")
    expect(echo.annotations).toMatchObject({ title: "Echo", readOnlyHint: true })
    // A session without a user lists every tool, connected toolkits included.
    expect(names).toEqual(expect.arrayContaining(["slack.post_message", "github.create_issue", "http.request"]))
    await close()
  })

  it("lists a user's tools: toolkits needing no connection, and those the user has a live connection for", async () => {
    const listed = async (user: string) => {
      const { client, close } = await connect(gw.url, { headers: { "x-service-user-id": user } })
      const names = (await client.listTools()).tools.map((tool) => tool.name)
      await close()
      return names
    }
    expect(await listed("carol")).not.toContain("slack.post_message")
    const created = await gw.service.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "carol", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb-1" }, scopes: ["chat:write"] }
    })
    expect(created.status).toBe(201)
    const names = await listed("carol")
    expect(names).toContain("slack.post_message")
    expect(names).not.toContain("github.create_issue")
    expect(names).toContain("demo.echo")
    expect(await listed("dave")).not.toContain("slack.post_message")
  })

  it("calls a tool: output as structuredContent and text, the execution in _meta", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    const result = await client.callTool({ name: "demo.echo", arguments: { hello: "world" } }) as Result
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent).toEqual({ hello: "world" })
    expect(JSON.parse(result.content[0]!.text!)).toEqual({ hello: "world" })
    expect(result._meta?.["dev.service/execution"]).toMatchObject({
      tool: "demo.echo",
      toolVersion: "1.0.0",
      status: "succeeded",
      latencyMs: expect.any(Number)
    })
    const execution = executionOf(result)!
    expect(execution.executionId).toMatch(/^exe_/)
    // The same execution as /v1 shows it: one code path.
    const record = await (await gw.service.fetch(`/v1/executions/${execution.executionId}`)).json() as { userId: string; mode: string }
    expect(record).toMatchObject({ userId: "user_1", mode: "sync" })
    // The wire name calls the same tool.
    expect(((await client.callTool({ name: "demo__echo", arguments: { a: 1 } })) as Result).structuredContent).toEqual({ a: 1 })
    await close()
  })

  it("answers a failing tool with isError, the normalized error twice, the execution and no structuredContent", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    const result = await client.callTool({ name: "demo.fail", arguments: { code: "rate_limited", retryAfter: 7 } }) as Result
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toBeUndefined()
    expect(errorOf(result)).toEqual({ code: "rate_limited", message: expect.any(String), retryable: true, retryAfter: 7 })
    expect(JSON.parse(result.content[0]!.text!)).toEqual(errorOf(result))
    expect(executionOf(result)).toMatchObject({ status: "failed", tool: "demo.fail" })
    await close()
  })

  it("answers an unknown tool with JSON-RPC -32602, refused arguments and a missing user with isError", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    expect(await rpcCode(client.callTool({ name: "demo.nope", arguments: {} }))).toBe(-32602)
    const refused = await client.callTool({ name: "demo.fail", arguments: { code: "teapot" } }) as Result
    expect(errorOf(refused)?.code).toBe("invalid_input")
    expect(executionOf(refused)).toBeUndefined()
    await close()
    const anonymous = await connect(gw.url)
    const missing = await anonymous.client.callTool({ name: "demo.echo", arguments: {} }) as Result
    expect(errorOf(missing)).toMatchObject({ code: "invalid_input", message: expect.stringContaining("No user") })
    const named = await anonymous.client.callTool({ name: "demo.echo", arguments: {}, _meta: { "dev.service/userId": "user_9" } }) as Result
    const record = await (await gw.service.fetch(`/v1/executions/${executionOf(named)!.executionId}`)).json() as { userId: string }
    expect(record.userId).toBe("user_9")
    await anonymous.close()
  })

  // decisions.md section 2: `__proto__` is an unknown field. JSON keeps it as a key; an object
  // built key by key (the SDK's parse of params) would take it for the prototype and drop it.
  it("judges the arguments as sent: a __proto__ key is refused as POST /v1/execute refuses it, in JSON and SSE answers", async () => {
    const session = await openSession(gw.url, { headers: USER })
    const sent = (name: string, args: string, accept?: string) =>
      `{"jsonrpc":"2.0","id":"${name}-${accept ?? ""}","method":"tools/call","params":{"name":"${name}","arguments":${args}}}`
    for (const accept of ["application/json", "application/json, text/event-stream"]) {
      const closed = await messageOf(await post(gw.url, sent("demo.fail", `{"code":"timeout","__proto__":{"x":1}}`, accept), { session, headers: USER, accept }))
      const result = closed.result as Result
      expect(result.isError).toBe(true)
      expect(errorOf(result)).toMatchObject({ code: "invalid_input", message: expect.stringContaining("__proto__") })
      expect(executionOf(result)).toBeUndefined()
    }
    const viaHttp = await gw.service.fetch("/v1/execute", {
      method: "POST",
      body: `{"tool":"demo.echo","userId":"user_1","input":{"a":1,"__proto__":{"x":1}}}`,
      headers: { "content-type": "application/json" }
    })
    const open = await messageOf(await post(gw.url, sent("demo.echo", `{"a":1,"__proto__":{"x":1}}`), { session, headers: USER, accept: "application/json" }))
    const echoed = open.result as Result
    if (viaHttp.status === 200) {
      const record = await viaHttp.json() as { output: unknown }
      expect(echoed.isError).toBeUndefined()
      expect(JSON.parse(echoed.content[0]!.text!)).toEqual(record.output)
      expect(Object.keys(record.output as object)).toContain("__proto__")
    } else {
      expect(viaHttp.status).toBe(422)
      expect(errorOf(echoed)?.code).toBe("invalid_input")
    }
  })

  it("holds a pinned key to its user: _meta naming another is auth_insufficient_scope, none means the pinned user", async () => {
    const { client, close } = await connect(gw.url, { key: PINNED_KEY })
    const other = await client.callTool({ name: "demo.echo", arguments: {}, _meta: { "dev.service/userId": "user_2" } }) as Result
    expect(errorOf(other)?.code).toBe("auth_insufficient_scope")
    const own = await client.callTool({ name: "demo.echo", arguments: {} }) as Result
    const record = await (await gw.service.fetch(`/v1/executions/${executionOf(own)!.executionId}`)).json() as { userId: string }
    expect(record.userId).toBe("user_1")
    await close()
  })

  it("searches the catalog with service.search_tools and runs a found tool with service.execute_tool", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    const found = await client.callTool({ name: "service.search_tools", arguments: { query: "slack message", limit: 2 } }) as Result
    const cards = (found.structuredContent as { tools: Array<{ name: string; toolkit: string; input: unknown }> }).tools
    expect(cards[0]).toMatchObject({ name: "slack.post_message", toolkit: "slack", input: { required: ["channel", "text"] } })
    expect(cards.length).toBeLessThanOrEqual(2)
    expect(found._meta?.["dev.service/execution"]).toBeUndefined()
    const extra = await client.callTool({ name: "service.search_tools", arguments: { query: "x", extra: 1 } }) as Result
    expect(errorOf(extra)?.code).toBe("invalid_input")
    const tooMany = await client.callTool({ name: "service.search_tools", arguments: { query: "x", limit: 51 } }) as Result
    expect(errorOf(tooMany)?.code).toBe("invalid_input")
    const ran = await client.callTool({ name: "service.execute_tool", arguments: { name: "demo.echo", input: { via: "execute" } } }) as Result
    expect(ran.structuredContent).toEqual({ via: "execute" })
    expect(executionOf(ran)?.tool).toBe("demo.echo")
    const unknown = await client.callTool({ name: "service.execute_tool", arguments: { name: "demo.nope" } }) as Result
    expect(errorOf(unknown)?.code).toBe("invalid_input")
    // The built-ins are not catalog tools: the refusal says to call them directly.
    for (const name of ["service.search_tools", "service.execute_tool"]) {
      const nested = await client.callTool({ name: "service.execute_tool", arguments: { name } }) as Result
      expect(errorOf(nested)).toMatchObject({ code: "invalid_input", message: expect.stringContaining(`call ${name} directly`) })
    }
    await close()
  })

  it("keys a call by mcp:<session>:<json-rpc id> unless _meta names a key", async () => {
    const session = await openSession(gw.url, { headers: USER })
    const call = (id: number, args: unknown, meta: Record<string, unknown> = {}) =>
      post(gw.url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "demo.echo", arguments: args, _meta: meta } }, { session, headers: USER })
        .then(messageOf)
        .then((m) => m.result as Result)
    const first = await call(41, { n: 1 })
    const again = await call(41, { n: 1 })
    expect(executionOf(again)?.executionId).toBe(executionOf(first)?.executionId)
    const other = await call(42, { n: 1 })
    expect(executionOf(other)?.executionId).not.toBe(executionOf(first)?.executionId)
    // The same JSON-RPC id with other input: the key's first use wins.
    expect(errorOf(await call(41, { n: 2 }))?.code).toBe("invalid_input")
    const keyed = await call(50, { k: 1 }, { "dev.service/idempotencyKey": "client-key-1" })
    const keyedAgain = await call(51, { k: 1 }, { "dev.service/idempotencyKey": "client-key-1" })
    expect(executionOf(keyedAgain)?.executionId).toBe(executionOf(keyed)?.executionId)
    const replayed = await (await gw.service.fetch(`/v1/executions/${executionOf(keyed)!.executionId}`)).json() as { replayed?: boolean }
    expect(replayed.replayed).toBe(true)
  })

  // Outside audit: POST /v1/execute refused a 33rd attachment, while a tools/call carried 300
  // through _meta; and an idempotency key with a line break was taken on both.
  it("holds _meta attachments to POST /v1/execute's 32, and the idempotency key to printable characters", async () => {
    const session = await openSession(gw.url, { headers: USER })
    const files: Array<string> = []
    for (let i = 0; i < 33; i++) {
      const staged = await gw.service.fetch("/v1/files", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: `a${i}.txt`, content: "eA==" }) })
      files.push(((await staged.json()) as { fileId: string }).fileId)
    }
    const call = (id: number, meta: Record<string, unknown>) =>
      post(gw.url, { jsonrpc: "2.0", id, method: "tools/call", params: { name: "demo.echo", arguments: { id }, _meta: meta } }, { session, headers: USER })
        .then(messageOf)
    const allowed = await call(1, { "dev.service/attachments": files.slice(0, 32) })
    expect(executionOf(allowed.result as Result)?.status).toBe("succeeded")
    for (const [id, meta] of [
      [2, { "dev.service/attachments": files }],
      [3, { "dev.service/idempotencyKey": "a\nb" }],
      [4, { "dev.service/idempotencyKey": "a\u0085b" }]
    ] as const) {
      const refused = (await call(id, meta)).result as Result
      expect(errorOf(refused)?.code, JSON.stringify(meta).slice(0, 80)).toBe("invalid_input")
      expect(executionOf(refused)).toBeUndefined()
    }
    // Nothing ran for them: demo.echo's output is its input.
    const executions = await (await gw.service.fetch("/v1/executions?limit=100")).json() as { executions: Array<{ output?: { id?: number } }> }
    expect(executions.executions.filter((record) => [2, 3, 4].includes(record.output?.id ?? 0))).toEqual([])
  })

  it("ends a call waiting on its tool when the client sends notifications/cancelled for it, whatever the answer's format", async () => {
    for (const accept of ["application/json", "application/json, text/event-stream"]) {
      const session = await openSession(gw.url, { headers: USER, capabilities: {} })
      const started = Date.now()
      const waiting = post(gw.url, { jsonrpc: "2.0", id: 77, method: "tools/call", params: { name: "demo.sleep", arguments: { ms: 30_000 } } }, {
        session,
        accept,
        headers: USER
      })
      // The call is under way (its execution exists) before it is cancelled.
      await new Promise((resolve) => setTimeout(resolve, 500))
      const cancel = await post(gw.url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 77, reason: "user" } }, { session, headers: USER })
      expect(cancel.status).toBe(202)
      const answered = await waiting
      const message = await messageOf(answered)
      expect(Date.now() - started, accept).toBeLessThan(10_000)
      // A JSON answer must say something: the request ended, cancelled. A stream simply ends
      // without a response, as MCP asks of a cancelled request.
      if (accept === "application/json") expect(message).toMatchObject({ id: 77, error: { code: -32000 } })
      else expect(message).not.toHaveProperty("result")
      // The execution the call started is cancelled too (MCP, "Cancellation": the receiver SHOULD
      // stop processing the request), found by the call's default idempotency key.
      const page = await (await gw.service.fetch("/v1/executions?tool=demo.sleep&userId=user_1&limit=1")).json() as {
        executions: Array<{ status: string; cancellation?: { dispatchMayHaveBegun: boolean } }>
      }
      expect(page.executions[0]).toMatchObject({ status: "cancelled", cancellation: { dispatchMayHaveBegun: true } })
    }
  })

  it("leaves a call's execution alone when the notifications/cancelled names another request or comes from another session", async () => {
    const session = await openSession(gw.url, { headers: USER, capabilities: {} })
    const other = await openSession(gw.url, { headers: USER, capabilities: {} })
    const waiting = post(gw.url, { jsonrpc: "2.0", id: 78, method: "tools/call", params: { name: "demo.sleep", arguments: { ms: 1_500 } } }, { session, headers: USER })
    await new Promise((resolve) => setTimeout(resolve, 500))
    await post(gw.url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 79 } }, { session, headers: USER })
    await post(gw.url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 78 } }, { session: other, headers: USER })
    const message = await messageOf(await waiting) as { result?: { structuredContent?: unknown } }
    expect(message.result?.structuredContent).toEqual({ sleptMs: 1_500 })
  })

  it("refuses an explicit idempotency key that POST /v1/execute would refuse (1..255 characters) as isError", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    for (const key of ["", "k".repeat(256)]) {
      const result = await client.callTool({ name: "demo.echo", arguments: { n: 1 }, _meta: { "dev.service/idempotencyKey": key } }) as Result
      expect(result.isError, `key of ${key.length}`).toBe(true)
      expect(errorOf(result)?.code).toBe("invalid_input")
      expect(executionOf(result)).toBeUndefined()
    }
    const longest = await client.callTool({ name: "demo.echo", arguments: { n: 1 }, _meta: { "dev.service/idempotencyKey": "k".repeat(255) } }) as Result
    expect(longest.isError).toBeUndefined()
    await close()
  })

  it("words a JSON-RPC error alike in a JSON and in an SSE answer, without the SDK's prefix", async () => {
    const session = await openSession(gw.url, { headers: USER })
    for (const accept of ["application/json", "application/json, text/event-stream"]) {
      const answer = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "nope.x", arguments: {} } }, {
        session,
        accept,
        headers: USER
      }))
      expect(answer, accept).toMatchObject({ id: 3, error: { code: -32602, message: "Unknown tool: nope.x" } })
    }
  })

  it("takes a named connection from _meta and refuses a bad one as isError", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    const result = await client.callTool({ name: "demo.echo", arguments: {}, _meta: { "dev.service/connectionId": "conn_00000000000000000000000000000000" } }) as Result
    expect(errorOf(result)?.code).toBe("invalid_input")
    const badMeta = await client.callTool({ name: "demo.echo", arguments: {}, _meta: { "dev.service/connectionId": 5 } }) as Result
    expect(errorOf(badMeta)?.code).toBe("invalid_input")
    await close()
  })

  it("runs an async-by-nature tool async and waits for it when tasks were not negotiated, with progress", async () => {
    const { client, close } = await connect(gw.url, { headers: USER, tasks: "none" })
    const progress: Array<{ progress: number; message?: string }> = []
    const result = await client.callTool({ name: "demo.sleep", arguments: { ms: 300 } }, undefined, {
      onprogress: (p) => void progress.push({ progress: p.progress, ...(p.message !== undefined ? { message: p.message } : {}) })
    }) as Result
    expect(result.structuredContent).toEqual({ sleptMs: 300 })
    const record = await (await gw.service.fetch(`/v1/executions/${executionOf(result)!.executionId}`)).json() as { mode: string }
    expect(record.mode).toBe("async")
    expect(progress.map((p) => p.message)).toEqual(["queued", "running", "succeeded"])
    expect(progress.map((p) => p.progress)).toEqual([0, 1, 2])
    await close()
  })

  it("refuses a plain call of a task-required tool (-32601) and a task on a forbidden one once tasks are negotiated", async () => {
    const session = await openSession(gw.url, { headers: USER })
    const plain = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "demo.sleep", arguments: { ms: 1 } } }, { session, headers: USER }))
    expect(plain.error).toMatchObject({ code: -32601 })
    const search = await messageOf(await post(gw.url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "service.search_tools", arguments: { query: "x" }, task: {} } }, { session, headers: USER }))
    expect(search.error).toMatchObject({ code: -32601 })
  })
})

describe("tools in search mode, with SERVICE_USER_ID", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_MCP_TOOLS: "search", SERVICE_USER_ID: "configured_user" })
  })
  afterAll(() => gw.close())

  it("lists only service.search_tools and service.execute_tool", async () => {
    const { client, close } = await connect(gw.url)
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(["service.search_tools", "service.execute_tool"])
    await close()
  })

  it("acts for SERVICE_USER_ID before the header and _meta", async () => {
    const { client, close } = await connect(gw.url, { headers: { "x-service-user-id": "header_user" } })
    const result = await client.callTool({ name: "service.execute_tool", arguments: { name: "demo.echo" }, _meta: { "dev.service/userId": "meta_user" } }) as Result
    const record = await (await gw.service.fetch(`/v1/executions/${executionOf(result)!.executionId}`)).json() as { userId: string }
    expect(record.userId).toBe("configured_user")
    await close()
  })

  it("refuses a pinned key when SERVICE_USER_ID names another user (403)", async () => {
    const response = await post(gw.url, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } }, { key: PINNED_KEY })
    expect(response.status).toBe(403)
  })
})

describe("the execute rate limit over MCP", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_RATE_LIMIT_EXECUTE_BURST: "2", SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1" })
  })
  afterAll(() => gw.close())

  it("answers a call refused by the execute bucket with isError rate_limited, retryable, with an integer retryAfter", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    const results: Array<Result> = []
    for (let i = 0; i < 3; i++) results.push(await client.callTool({ name: "demo.echo", arguments: { i } }) as Result)
    expect(results.slice(0, 2).every((r) => r.isError === undefined)).toBe(true)
    const refused = errorOf(results[2]!)
    // The same refusal, in the same words, as POST /v1/execute's.
    expect(refused).toMatchObject({ code: "rate_limited", retryable: true, message: "The project's execute rate limit is exhausted." })
    expect(Number.isInteger(refused?.retryAfter)).toBe(true)
    // The search takes no execute token.
    expect(((await client.callTool({ name: "service.search_tools", arguments: { query: "echo" } })) as Result).isError).toBeUndefined()
    await close()
  })
})

describe("the execute token of a call that is refused", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_RATE_LIMIT_EXECUTE_BURST: "3", SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1" })
  })
  afterAll(() => gw.close())

  it("takes one for service.execute_tool naming an unknown tool or with bad arguments, and for a call with no user, as POST /v1/execute does", async () => {
    const withUser = await connect(gw.url, { headers: USER })
    const unknown = await withUser.client.callTool({ name: "service.execute_tool", arguments: { name: "nope.nope", input: {} } }) as Result
    expect(errorOf(unknown)?.code).toBe("invalid_input")
    const misnamed = await withUser.client.callTool({ name: "service.execute_tool", arguments: { nam: "demo.echo" } }) as Result
    expect(errorOf(misnamed)?.code).toBe("invalid_input")
    const noUser = await connect(gw.url)
    const anonymous = await noUser.client.callTool({ name: "demo.echo", arguments: {} }) as Result
    expect(errorOf(anonymous)?.code).toBe("invalid_input")
    // Three execution requests took the bucket's three tokens: the next is refused.
    const next = await withUser.client.callTool({ name: "demo.echo", arguments: {} }) as Result
    expect(errorOf(next)).toMatchObject({ code: "rate_limited", retryable: true })
    await withUser.close()
    await noUser.close()
  })
})

describe("the daily execution quota over MCP", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway({ SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "1" })
  })
  afterAll(() => gw.close())

  it("answers a call past the quota with isError rate_limited naming the quota, retryable after its reset", async () => {
    const { client, close } = await connect(gw.url, { headers: USER })
    expect(((await client.callTool({ name: "demo.echo", arguments: { i: 1 } })) as Result).isError).toBeUndefined()
    const refused = errorOf((await client.callTool({ name: "demo.echo", arguments: { i: 2 } })) as Result)
    expect(refused).toMatchObject({
      code: "rate_limited",
      retryable: true,
      message: "The project's daily execution quota is used up; it resets at 00:00 UTC."
    })
    const midnight = new Date()
    midnight.setUTCHours(24, 0, 0, 0)
    expect(refused?.retryAfter).toBeGreaterThanOrEqual(1)
    expect(refused?.retryAfter).toBeLessThanOrEqual(Math.ceil((midnight.getTime() - Date.now()) / 1000) + 1)
    await close()
  })
})

describe("notifications/cancelled of a sync tool's call", () => {
  let gw: GatewayUnderTest
  let hanging: Server
  let hangingUrl: string
  beforeAll(async () => {
    // A receiver that never answers: the http.request call stays dispatched until cancelled.
    hanging = createServer(() => undefined)
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", resolve))
    hangingUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}/slow`
    gw = await startGateway({ SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" })
  })
  afterAll(async () => {
    await gw.close()
    hanging.closeAllConnections()
    hanging.close()
  })

  it("cancels the sync execution a plain call is waiting for, which keeps its mode", async () => {
    const session = await openSession(gw.url, { headers: USER, capabilities: {} })
    const waiting = post(gw.url, {
      jsonrpc: "2.0",
      id: 5,
      method: "tools/call",
      params: { name: "http.request", arguments: { method: "GET", url: hangingUrl } }
    }, { session, headers: USER, accept: "application/json" })
    await new Promise((resolve) => setTimeout(resolve, 500))
    await post(gw.url, { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 5 } }, { session, headers: USER })
    expect(await messageOf(await waiting)).toMatchObject({ id: 5, error: { code: -32000 } })
    const page = await (await gw.service.fetch("/v1/executions?tool=http.request&userId=user_1")).json() as {
      executions: Array<{ status: string; mode: string; cancellation?: { dispatchMayHaveBegun: boolean } }>
    }
    expect(page.executions).toHaveLength(1)
    expect(page.executions[0]).toMatchObject({ status: "cancelled", mode: "sync", cancellation: { dispatchMayHaveBegun: true } })
  })
})

describe("the demo concurrency cap over MCP", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw.close())

  it("answers a plain call of a tool async by nature with isError rate_limited when the cap is full, as POST /v1/execute answers 429", async () => {
    const running: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const response = await gw.service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.sleep", userId: "user_cap", input: { ms: 60_000 }, mode: "async" } })
      expect(response.status).toBe(202)
      running.push(((await response.json()) as { executionId: string }).executionId)
    }
    try {
      for (const tasks of ["none", "experimental"] as const) {
        const { client, close } = await connect(gw.url, { headers: USER, tasks })
        for (const call of [{ name: "demo.sleep", arguments: { ms: 10 } }, { name: "service.execute_tool", arguments: { name: "demo.sleep", input: { ms: 10 } } }]) {
          if (tasks !== "none" && call.name === "demo.sleep") continue
          const result = (await client.callTool(call, undefined, { timeout: 5_000 })) as Result
          expect({ tasks, call: call.name, error: errorOf(result) }).toMatchObject({ tasks, call: call.name, error: { code: "rate_limited", retryable: true, retryAfter: 1 } })
        }
        await close()
      }
    } finally {
      for (const id of running) await gw.service.fetch(`/v1/executions/${id}/cancel`, { method: "POST" })
    }
  })
})
