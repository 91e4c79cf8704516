import { Effect } from "effect"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { createClient, makeServiceClient, ServiceClient } from "../../client/index.ts"
import { type InProcessService, KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { rejection } from "./Rejection.ts"

const TOKEN = "ghp_client_test_secret_0042"

describe("client against the service", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "1000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "6000" })
  })
  afterAll(() => service.close())

  it("me, through the Promise facade and the Effect client", async () => {
    expect(await createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY }).me()).toMatchObject({ projectId: "proj_test", pinnedUserId: "user_1" })
    const me = await Effect.runPromise(
      Effect.flatMap(ServiceClient, (client) => client.me()).pipe(Effect.provide(ServiceClient.layer({ baseUrl: service.baseUrl, apiKey: KEY })))
    )
    expect(me.projectId).toBe("proj_test")
    expect(me.pinnedUserId).toBeUndefined()
  })

  it("connections: create, list with the client's default user, get, delete", async () => {
    const client = createClient({ baseUrl: `${service.baseUrl}/`, apiKey: KEY, userId: "client_user" })
    const created = await client.connections.create({ toolkit: "github", authClass: "bearer", credentials: { token: TOKEN }, scopes: ["repo"] })
    expect(created).toMatchObject({ userId: "client_user", toolkit: "github", authClass: "bearer", scopes: ["repo"] })
    expect(JSON.stringify(created)).not.toContain(TOKEN)
    await client.connections.create({ userId: "someone_else", toolkit: "github", authClass: "bearer", credentials: { token: TOKEN } })
    const mine = await client.connections.list()
    expect(mine.connections.map((c) => c.connectionId)).toEqual([created.connectionId])
    const everyone = await createClient({ baseUrl: service.baseUrl, apiKey: KEY }).connections.list({ limit: 1 })
    expect(everyone.connections).toHaveLength(1)
    expect(everyone.nextCursor).toBeDefined()
    expect(await client.connections.get(created.connectionId)).toEqual(created)
    await client.connections.delete(created.connectionId)
    const gone = await rejection(client.connections.get(created.connectionId))
    expect(gone).toMatchObject({ status: 404, code: "not_found", retryable: false })
  })

  it("files: create from bytes or base64, list with paging, get; 404, 403 and 422", async () => {
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
    const fromBytes = await client.files.create({ name: "a.bin", content: new Uint8Array([0, 255, 7]) })
    expect(fromBytes).toMatchObject({ name: "a.bin", mimeType: "application/octet-stream", size: 3 })
    expect(fromBytes.fileId).toMatch(/^file_/)
    const fromBase64 = await client.files.create({ name: "b.txt", content: btoa("hello"), mimeType: "text/plain" })
    expect(fromBase64).toMatchObject({ name: "b.txt", mimeType: "text/plain", size: 5 })
    expect(await client.files.get(fromBytes.fileId)).toEqual(fromBytes)
    // Newest first, one per page, the cursor leads to the next.
    const first = await client.files.list({ limit: 1 })
    expect(first.files).toEqual([fromBase64])
    expect(first.nextCursor).toBeDefined()
    const second = await client.files.list({ limit: 1, cursor: first.nextCursor })
    expect(second.files).toEqual([fromBytes])
    const viaEffect = await Effect.runPromise(makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY }).files.get(fromBase64.fileId))
    expect(viaEffect).toEqual(fromBase64)

    expect(await rejection(client.files.get("file_missing"))).toMatchObject({ status: 404, code: "not_found" })
    const pinned = createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY })
    expect(await rejection(pinned.files.list())).toMatchObject({ status: 403, code: "auth_insufficient_scope" })
    expect(await pinned.files.get(fromBytes.fileId)).toEqual(fromBytes)
    expect(await rejection(client.files.create({ name: "bad", content: "not base64!" }))).toMatchObject({ status: 422, code: "invalid_input" })
    expect(await rejection(client.files.list({ cursor: "forged" }))).toMatchObject({ status: 422, code: "invalid_input" })
  })

  it("executions: execute sync and async, get, list with filters and paging, cancel, wait", async () => {
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY, userId: "exec_user" })
    const echoed = await client.executions.execute({ tool: "demo.echo", input: { hello: "world" } })
    expect(echoed).toMatchObject({ status: "succeeded", output: { hello: "world" }, userId: "exec_user", tool: "demo.echo", mode: "sync" })
    const sleeping = await client.executions.execute({ tool: "demo.sleep", input: { ms: 60_000 }, mode: "async" })
    expect(sleeping).toMatchObject({ status: "pending", mode: "async" })
    const short = await client.executions.execute({ tool: "demo.sleep", input: { ms: 50 }, mode: "async" })
    const done = await client.executions.wait(short.executionId, { pollMs: 25, timeoutMs: 10_000 })
    expect(done).toMatchObject({ executionId: short.executionId, status: "succeeded", output: { sleptMs: 50 } })
    expect(await client.executions.get(echoed.executionId)).toEqual(echoed)

    const succeeded = await client.executions.list({ status: "succeeded", tool: "demo.echo" })
    expect(succeeded.executions.map((e) => e.executionId)).toEqual([echoed.executionId])
    const page = await client.executions.list({ limit: 2 })
    expect(page.executions).toHaveLength(2)
    expect(page.nextCursor).toBeDefined()
    const rest = await client.executions.list({ limit: 2, cursor: page.nextCursor })
    expect(rest.executions.map((e) => e.executionId)).toEqual([echoed.executionId])
    expect((await client.executions.list({ userId: "nobody" })).executions).toEqual([])

    const cancelled = await client.executions.cancel(sleeping.executionId)
    expect(cancelled).toMatchObject({ executionId: sleeping.executionId, status: "cancelled", error: { code: "execution_cancelled" } })
    // Effect client: the same record through wait.
    const waited = await Effect.runPromise(makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY }).executions.wait(sleeping.executionId))
    expect(waited.status).toBe("cancelled")

    expect(await rejection(client.executions.get("exe_missing"))).toMatchObject({ status: 404, code: "not_found" })
    expect(await rejection(client.executions.cancel(echoed.executionId))).toMatchObject({ status: 409, code: "invalid_input" })
    expect(await rejection(client.executions.execute({ tool: "demo.nothing" }))).toMatchObject({ status: 422, code: "invalid_input" })
    const pinned = createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY })
    expect(await rejection(pinned.executions.execute({ tool: "demo.echo", userId: "exec_user" })))
      .toMatchObject({ status: 403, code: "auth_insufficient_scope" })
    expect(await rejection(pinned.executions.get(echoed.executionId))).toMatchObject({ status: 404, code: "not_found" })
  })

  it("surfaces the error envelope as typed ServiceErrors", async () => {
    const wrongKey = await rejection(createClient({ baseUrl: service.baseUrl, apiKey: "not_a_real_key_000000" }).me())
    expect(wrongKey).toMatchObject({ _tag: "ServiceError", status: 401, code: "auth_expired", retryable: false })
    expect(wrongKey.requestId).toMatch(/^req_/)
    const noKey = await rejection(createClient({ baseUrl: service.baseUrl, apiKey: "" }).me())
    expect(noKey).toMatchObject({ status: 401, code: "auth_missing" })
    const client = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
    const missing = await rejection(client.connections.get("conn_nothing"))
    expect(missing).toMatchObject({ status: 404, code: "not_found" })
    const invalid = await rejection(client.connections.create({ userId: "u", toolkit: "nope", authClass: "bearer", credentials: { token: "t" } }))
    expect(invalid).toMatchObject({ status: 422, code: "invalid_input", retryable: false })
    expect(invalid.message).toContain("Unknown toolkit")
    const pinned = await rejection(createClient({ baseUrl: service.baseUrl, apiKey: PINNED_KEY, userId: "other" }).connections.list())
    expect(pinned).toMatchObject({ status: 403, code: "auth_insufficient_scope" })
    // The Effect client fails with the same class, catchable by tag.
    const tagged = await Effect.runPromise(
      makeServiceClient({ baseUrl: service.baseUrl, apiKey: KEY }).connections.get("conn_nothing").pipe(
        Effect.catchTag("ServiceError", (error) => Effect.succeed(error.code))
      )
    )
    expect(tagged).toBe("not_found")
  })

  it("a network failure is a retryable ServiceError with status 0", async () => {
    const error = await rejection(createClient({ baseUrl: "http://127.0.0.1:1", apiKey: KEY }).me())
    expect(error).toMatchObject({ status: 0, code: "provider_unavailable", retryable: true, requestId: "" })
  })
})

interface Stub {
  baseUrl: string
  readonly requests: Array<{ method: string; url: string; at: number; body: string }>
  /** Answers, in order; the last one repeats. */
  answers: Array<(res: ServerResponse) => void>
}

const envelope = (res: ServerResponse, status: number, code: string, headers: Record<string, string> = {}, retryAfter?: number) => {
  res.writeHead(status, { "content-type": "application/json", "request-id": "req_stub", ...headers })
  res.end(JSON.stringify({ error: { code, message: code, retryable: code === "rate_limited", ...(retryAfter === undefined ? {} : { retryAfter }) }, requestId: "req_stub" }))
}
const tooMany = (res: ServerResponse) => envelope(res, 429, "rate_limited", { "retry-after": "1" })
const okMe = (res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify({ projectId: "proj_stub", keyId: "key_stub" }))
}
const json = (value: unknown) => (res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(JSON.stringify(value))
}
const record = (status: string) => (res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" })
  const base = { executionId: "exe_1", projectId: "p", userId: "u", tool: "demo.sleep", toolVersion: "1", catalogVersion: "c", mode: "async", createdAt: "2026-01-01T00:00:00.000Z" }
  res.end(JSON.stringify(status === "succeeded" ? { ...base, status, output: { sleptMs: 1 }, latencyMs: 1 } : { ...base, status }))
}

describe("client policies against a stub", () => {
  let server: Server
  const stub: Stub = { baseUrl: "", requests: [], answers: [] }
  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const entry = { method: req.method ?? "", url: req.url ?? "", at: Date.now(), body: "" }
      stub.requests.push(entry)
      req.setEncoding("utf8")
      req.on("data", (chunk: string) => {
        entry.body += chunk
      })
      req.on("end", () => {
        const answer = stub.answers.length > 1 ? stub.answers.shift() : stub.answers[0]
        if (answer === undefined) res.writeHead(500).end()
        else answer(res)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    stub.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
  const reset = (...answers: Array<(res: ServerResponse) => void>) => {
    stub.requests.length = 0
    stub.answers = answers
  }
  const client = () => createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key" })

  // Outside audit: a key read with a line break (a two-line key file) failed in fetch's header
  // check, whose message quotes the whole Authorization value: the key ended up in the error, and
  // the error said "retryable network failure", so a retrying caller looped on it.
  it("a key no header can carry is refused before any request, without quoting it", async () => {
    reset(okMe)
    for (const apiKey of ["audit_client_key_aaaaaaaa\nsecond_line", "key_with_nul_SECRET\u0000", "key\r\nX-Injected: SECRET"]) {
      const error = await rejection(createClient({ baseUrl: stub.baseUrl, apiKey }).me())
      expect(error).toMatchObject({ status: 0, code: "invalid_input", retryable: false })
      expect(String(error)).not.toContain("SECRET")
      expect(String(error)).not.toContain("second_line")
      expect(error.message).not.toContain("aaaaaaaa")
    }
    expect(stub.requests).toHaveLength(0)
  })

  it("a network failure's message never quotes the key", async () => {
    const leaky = (() => Promise.reject(new TypeError('Headers.append: "Bearer stub_key_SECRET" is an invalid header value.'))) as never
    const error = await rejection(createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key_SECRET", fetch: leaky }).me())
    expect(error.code).toBe("provider_unavailable")
    expect(error.message).not.toContain("stub_key_SECRET")
  })

  // Outside audit: an invalid Date (or an id no URL can carry) threw synchronously, a RangeError
  // or URIError instead of the ServiceError every failure is.
  it("an argument that cannot be sent is a ServiceError invalid_input, in the Promise and the Effect client", async () => {
    reset(okMe)
    const error = await rejection(client().webhooks.recover("whe_x", { since: new Date(Number.NaN) }))
    expect(error).toMatchObject({ status: 0, code: "invalid_input", retryable: false })
    expect((await rejection(client().executions.get("exe_\uD800"))).code).toBe("invalid_input")
    const viaEffect = await Effect.runPromise(
      Effect.flip(makeServiceClient({ baseUrl: stub.baseUrl, apiKey: "stub_key" }).webhooks.recover("whe_x", { since: new Date(Number.NaN) }))
    )
    expect(viaEffect.code).toBe("invalid_input")
    expect(stub.requests).toHaveLength(0)
  })

  // Before stop 52 the client had no deadline of its own: a service that accepted the connection
  // and never answered held a call (and, in the Promise client, its caller) for good.
  it("a call unanswered within requestTimeoutMs fails with timeout, its request aborted; a later answer is unaffected", async () => {
    const silent = (res: ServerResponse) => {
      res.on("close", () => closed.push(Date.now()))
    }
    const closed: Array<number> = []
    reset(silent, okMe)
    const impatient = createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", requestTimeoutMs: 300 })
    const started = Date.now()
    const error = await rejection(impatient.me())
    const elapsed = Date.now() - started
    expect(error).toMatchObject({ status: 0, code: "timeout", retryable: true, requestId: "" })
    expect(error.message).toBe("GET /v1/me had no answer within 300 ms.")
    expect(elapsed).toBeGreaterThanOrEqual(290)
    expect(elapsed).toBeLessThan(2000)
    await vi.waitFor(() => expect(closed).toHaveLength(1))
    // Not retried: a timed-out call may have acted.
    expect(stub.requests).toHaveLength(1)
    expect(await impatient.me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
    // Through Effect too, and 0 means no deadline of the client's own.
    reset(silent)
    const effectError = await Effect.runPromise(Effect.flip(makeServiceClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", requestTimeoutMs: 200 }).me()))
    expect(effectError).toMatchObject({ status: 0, code: "timeout" })
    reset((res) => setTimeout(() => okMe(res), 400))
    expect(await createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", requestTimeoutMs: 0 }).me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
  })

  it("a body that stops halfway counts against requestTimeoutMs too", async () => {
    reset((res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "100" })
      res.write('{"projectId":')
    })
    const error = await rejection(createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", requestTimeoutMs: 300 }).me())
    expect(error).toMatchObject({ status: 0, code: "timeout" })
  })

  it("a GET answered 429 is retried once after Retry-After", async () => {
    reset(tooMany, okMe)
    expect(await client().me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
    expect(stub.requests.map((r) => r.method)).toEqual(["GET", "GET"])
    const [first, second] = stub.requests
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(950)
  })

  it("onRetryWait hears of the wait before the one retry, and of nothing else", async () => {
    const waits: Array<{ method: string; path: string; seconds: number; status: number; code: string }> = []
    const heard = createClient({
      baseUrl: stub.baseUrl,
      apiKey: "stub_key",
      onRetryWait: (wait) => waits.push({ method: wait.method, path: wait.path, seconds: wait.seconds, status: wait.error.status, code: wait.error.code })
    })
    reset(tooMany, okMe)
    expect(await heard.me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
    expect(waits).toEqual([{ method: "GET", path: "/v1/me", seconds: 1, status: 429, code: "rate_limited" }])
    // Not retried, not heard: a POST's 429, and an answer that needs no retry.
    reset(tooMany, okMe)
    await rejection(heard.executions.cancel("exe_1"))
    reset(okMe)
    await heard.me()
    expect(waits).toHaveLength(1)
    // A hook that throws changes nothing for the request.
    const throwing = createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", onRetryWait: () => { throw new Error("hook") } })
    reset(tooMany, okMe)
    expect(await throwing.me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
  })

  it("a second 429 surfaces, and there is no third try", async () => {
    reset(tooMany, tooMany, okMe)
    const error = await rejection(client().me())
    expect(error).toMatchObject({ status: 429, code: "rate_limited", retryable: true, retryAfter: 1, requestId: "req_stub" })
    expect(stub.requests).toHaveLength(2)
  })

  it("the envelope's retryAfter serves when there is no Retry-After header", async () => {
    reset((res) => envelope(res, 429, "rate_limited", {}, 1), okMe)
    await client().me()
    expect(stub.requests).toHaveLength(2)
  })

  it("a GET answered 503 with a retry delay (the service's store away) is retried once; other failures are not", async () => {
    const storeAway = (res: ServerResponse) => {
      res.writeHead(503, { "content-type": "application/json", "request-id": "req_stub", "retry-after": "1" })
      res.end(JSON.stringify({ error: { code: "provider_unavailable", message: "away", retryable: true, retryAfter: 1 }, requestId: "req_stub" }))
    }
    reset(storeAway, okMe)
    expect(await client().me()).toEqual({ projectId: "proj_stub", keyId: "key_stub" })
    expect(stub.requests.map((r) => r.method)).toEqual(["GET", "GET"])
    expect((stub.requests[1]?.at ?? 0) - (stub.requests[0]?.at ?? 0)).toBeGreaterThanOrEqual(950)
    // Without a delay the service does not say a retry will work: surfaced at once.
    reset((res) => envelope(res, 502, "provider_unavailable"), okMe)
    expect((await rejection(client().me())).status).toBe(502)
    expect(stub.requests).toHaveLength(1)
    // Never a POST.
    reset(storeAway, okMe)
    expect((await rejection(client().executions.cancel("exe_1"))).status).toBe(503)
    expect(stub.requests.map((r) => r.method)).toEqual(["POST"])
  })

  it("an envelope whose code this client does not know keeps the service's code, message and request id", async () => {
    reset((res) => {
      res.writeHead(500, { "content-type": "application/json", "request-id": "req_fake" })
      res.end(JSON.stringify({ error: { code: "internal", message: "Something broke on the server.", retryable: false }, requestId: "req_fake" }))
    })
    expect(await rejection(client().me())).toMatchObject({
      status: 500,
      code: "internal",
      message: "Something broke on the server.",
      retryable: false,
      requestId: "req_fake"
    })
    // Not an envelope at all (a proxy's page): still a code made from the status.
    reset((res) => res.writeHead(500, { "content-type": "text/html" }).end("<h1>Bad gateway</h1>"))
    expect(await rejection(client().me())).toMatchObject({ status: 500, code: "provider_unavailable", message: "HTTP 500 without an error envelope." })
  })

  it("POST and DELETE are never retried", async () => {
    reset(tooMany, okMe)
    expect(await rejection(client().connections.create({ userId: "u", toolkit: "github", authClass: "bearer", credentials: { token: "t" } })))
      .toMatchObject({ status: 429, code: "rate_limited" })
    expect(stub.requests.map((r) => r.method)).toEqual(["POST"])
    reset(tooMany, okMe)
    expect((await rejection(client().connections.delete("conn_x"))).status).toBe(429)
    reset(tooMany, okMe)
    expect((await rejection(client().executions.cancel("exe_1"))).status).toBe(429)
    expect(stub.requests.map((r) => r.method)).toEqual(["POST"])
  })

  it("wait polls until the record is terminal", async () => {
    reset(record("pending"), record("running"), record("succeeded"))
    const done = await client().executions.wait("exe_1", { pollMs: 20 })
    expect(done.status).toBe("succeeded")
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill("GET /v1/executions/exe_1"))
  })

  // Outside audit: one dropped connection ended the whole wait, though the deadline was far.
  it("wait polls on through a poll that got no answer or a 503, until its deadline", async () => {
    const storeAway = (res: ServerResponse) => {
      res.writeHead(503, { "content-type": "application/json", "request-id": "req_stub" })
      res.end(JSON.stringify({ error: { code: "provider_unavailable", message: "store away", retryable: true }, requestId: "req_stub" }))
    }
    reset(record("running"), storeAway, record("succeeded"))
    // The second poll gets no answer at all (a dropped connection).
    let calls = 0
    const dropping = ((input: string, init: RequestInit) => (++calls === 2 ? Promise.reject(new TypeError("fetch failed")) : fetch(input, init))) as never
    const done = await createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", fetch: dropping }).executions.wait("exe_1", { pollMs: 20, timeoutMs: 5_000 })
    expect(done.status).toBe("succeeded")
    expect(calls).toBe(4)
    expect(stub.requests).toHaveLength(3)
    // Not a refusal of the request itself: a 404 still ends it at once.
    reset((res) => envelope(res, 404, "not_found"))
    expect((await rejection(client().executions.wait("exe_1", { pollMs: 20, timeoutMs: 5_000 }))).code).toBe("not_found")
    expect(stub.requests).toHaveLength(1)
  })

  it("wait never polls faster than every 20 ms, whatever pollMs says (0, negative, not a number)", async () => {
    for (const pollMs of [0, -5, Number.NaN]) {
      reset(record("pending"))
      const error = await rejection(client().executions.wait("exe_1", { pollMs, timeoutMs: 200 }))
      expect(error).toMatchObject({ code: "timeout" })
      // At most one poll per 20 ms over 200 ms, plus the first and the one at the deadline.
      expect(stub.requests.length).toBeLessThanOrEqual(12)
    }
  })

  it("wait fails with code timeout at its deadline", async () => {
    reset(record("pending"))
    const started = Date.now()
    const error = await rejection(client().executions.wait("exe_1", { pollMs: 50, timeoutMs: 300 }))
    expect(error).toMatchObject({ status: 0, code: "timeout", retryable: true })
    const elapsed = Date.now() - started
    expect(elapsed).toBeGreaterThanOrEqual(290)
    expect(elapsed).toBeLessThan(2000)
    expect(stub.requests.length).toBeGreaterThanOrEqual(3)
  })

  // Outside audit: a poll answered 429 with retryAfter 5 slept the whole 5 s before its retry, so
  // wait({ timeoutMs: 1000 }) failed after about 5.2 s.
  it("wait keeps its deadline when a poll is refused with a retry delay longer than the time left", async () => {
    // A poll the previous test's deadline cut off may still reach the stub: let it land first,
    // or it takes this test's first answer.
    await new Promise((resolve) => setTimeout(resolve, 200))
    reset(record("pending"), (res) => envelope(res, 429, "rate_limited", { "retry-after": "5" }, 5), record("pending"))
    const started = Date.now()
    const error = await rejection(client().executions.wait("exe_1", { pollMs: 50, timeoutMs: 1000 }))
    const elapsed = Date.now() - started
    expect(error).toMatchObject({ status: 0, code: "timeout", retryable: true })
    expect(error.message).toBe("Execution exe_1 was still pending after 1000 ms.")
    expect(elapsed).toBeGreaterThanOrEqual(950)
    expect(elapsed).toBeLessThan(2000)
    // A deadline already past reads the record once: a terminal one is the answer.
    reset(record("succeeded"))
    expect(await client().executions.wait("exe_1", { timeoutMs: 0 })).toMatchObject({ status: "succeeded" })
  })

  it("sends what the routes expect: base64 file content, the default user, encoded ids", async () => {
    const file = { fileId: "file_1", name: "a.bin", mimeType: "application/octet-stream", size: 3, expiresAt: "2026-01-01T00:00:00.000Z" }
    const withUser = createClient({ baseUrl: stub.baseUrl, apiKey: "stub_key", userId: "dflt" })
    reset(json(file))
    expect(await withUser.files.create({ name: "a.bin", content: new Uint8Array([0, 255, 7]) })).toEqual(file)
    expect(JSON.parse(stub.requests[0]?.body ?? "")).toEqual({ name: "a.bin", content: "AP8H" })
    reset(json({ files: [file], nextCursor: "c" }))
    expect((await withUser.files.list({ limit: 5, cursor: "a/b" })).nextCursor).toBe("c")
    expect(stub.requests[0]?.url).toBe("/v1/files?limit=5&cursor=a%2Fb")
    reset(json({ executions: [] }))
    await withUser.executions.list({ status: "running" })
    await withUser.executions.list({ userId: "explicit" })
    expect(stub.requests.map((r) => r.url)).toEqual(["/v1/executions?status=running&userId=dflt", "/v1/executions?userId=explicit"])
    reset(record("pending"))
    await withUser.executions.execute({ tool: "demo.sleep", input: { ms: 10 }, mode: "async" })
    expect(JSON.parse(stub.requests[0]?.body ?? "")).toEqual({ tool: "demo.sleep", input: { ms: 10 }, mode: "async", userId: "dflt" })
    reset(record("pending"))
    await withUser.executions.get("exe/../x")
    expect(stub.requests[0]?.url).toBe("/v1/executions/exe%2F..%2Fx")
  })

  it("a body that breaks the contract is a provider_error, not a crash", async () => {
    reset((res) => {
      res.writeHead(200, { "content-type": "application/json", "request-id": "req_bad" })
      res.end(JSON.stringify({ nothing: true }))
    })
    expect(await rejection(client().me())).toMatchObject({ status: 200, code: "provider_error", requestId: "req_bad" })
  })
})
