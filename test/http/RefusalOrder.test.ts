/**
 * Which refusal comes first (decisions.md section 2; spec, Authentication 3): a request without a
 * valid key is 401 whatever its body or media type; a pinned key on a project-wide route (the
 * file list, the trigger history, every webhook route) is 403 whatever its body or query; and a
 * route that takes no body refuses one that is not JSON (400) or names fields (422), rather than
 * acting on it.
 */
import { type IncomingHttpHeaders, request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KEY, PINNED_KEY, type InProcessService, startService } from "../support/Service.ts"

const codeOf = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code

describe("the order of refusals", () => {
  let service: InProcessService
  let endpointId: string
  beforeAll(async () => {
    service = await startService()
    const created = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/hook", events: ["execution.completed"] } })
    endpointId = ((await created.json()) as { endpointId: string }).endpointId
  })
  afterAll(() => service.close())

  it("answers 401 without a valid key, before the media type or the declared size", async () => {
    for (const key of [null, "not_a_real_key_0000000001"]) {
      const plain = await service.fetch("/v1/webhooks", { method: "POST", key, headers: { "content-type": "text/plain" }, body: "hello" })
      expect(plain.status).toBe(401)
      const huge = await service.fetch("/v1/files", {
        method: "POST",
        key,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "a", content: "A".repeat(1_200_000) })
      })
      expect(huge.status).toBe(401)
    }
    // With a valid key, the media type is judged.
    const plain = await service.fetch("/v1/webhooks", { method: "POST", headers: { "content-type": "text/plain" }, body: "hello" })
    expect(plain.status).toBe(415)
  })

  it("answers 403 to a pinned key on a project-wide route, whatever its body or query", async () => {
    const cases: ReadonlyArray<readonly [string, string, string | undefined]> = [
      ["POST", "/v1/webhooks", "{"],
      ["POST", "/v1/webhooks", "{\"x\":1}"],
      ["PATCH", `/v1/webhooks/${endpointId}`, "{"],
      ["POST", `/v1/webhooks/${endpointId}/recover`, "{"],
      ["GET", "/v1/webhooks?foo=1", undefined],
      ["GET", "/v1/webhooks?limit=0", undefined],
      ["GET", "/v1/files?limit=0", undefined],
      ["GET", "/v1/trigger-events?limit=0", undefined],
      ["GET", `/v1/webhooks/${endpointId}/deliveries?cursor=forged`, undefined]
    ]
    for (const [method, path, body] of cases) {
      const response = await service.fetch(path, {
        method,
        key: PINNED_KEY,
        ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body })
      })
      expect(response.status, `${method} ${path} ${body}`).toBe(403)
      expect(await codeOf(response)).toBe("auth_insufficient_scope")
      // The refusal still counts against the project's bucket, like any authenticated request.
      expect(response.headers.get("ratelimit-remaining"), `${method} ${path}`).not.toBeNull()
    }
    // Whatever its media type or declared size.
    const plain = await service.fetch("/v1/webhooks", { method: "POST", key: PINNED_KEY, headers: { "content-type": "text/plain" }, body: "hello" })
    expect(plain.status).toBe(403)
    const huge = await service.fetch("/v1/webhooks", { method: "POST", key: PINNED_KEY, json: { url: "https://example.com/" + "a".repeat(1_100_000) } })
    expect(huge.status).toBe(403)
    // A pinned key's own routes still validate as before.
    const bad = await service.fetch("/v1/files?limit=0", { key: KEY })
    expect(bad.status).toBe(422)
  })

  it("refuses a body on a route that takes none: 400 when it is not JSON, 422 when it names a field", async () => {
    const before = await service.fetch(`/v1/webhooks/${endpointId}`)
    const prefix = ((await before.json()) as { secretPrefix: string }).secretPrefix
    const rotate = `/v1/webhooks/${endpointId}/rotate-secret`
    const notJson = await service.fetch(rotate, { method: "POST", headers: { "content-type": "application/json" }, body: "{" })
    expect(notJson.status).toBe(400)
    const field = await service.fetch(rotate, { method: "POST", json: { x: 1 } })
    expect(field.status).toBe(422)
    expect(await codeOf(field)).toBe("invalid_input")
    const after = await service.fetch(`/v1/webhooks/${endpointId}`)
    expect(((await after.json()) as { secretPrefix: string }).secretPrefix).toBe(prefix)
    // An empty object, or no body at all, is what such a route takes.
    expect((await service.fetch(rotate, { method: "POST", json: {} })).status).toBe(200)
    expect((await service.fetch(rotate, { method: "POST" })).status).toBe(200)
    const removed = await service.fetch(`/v1/webhooks/${endpointId}`, { method: "DELETE", json: { x: 1 } })
    expect(removed.status).toBe(422)
    expect((await service.fetch(`/v1/webhooks/${endpointId}`)).status).toBe(200)
  })
})

// decisions.md section 2: every authenticated request takes a token (POST /v1/execute from the
// execute bucket), refused ones included, and every answer behind the limit carries the headers.
describe("refusals the edge makes after the key, against the rate limit", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1",
      SERVICE_RATE_LIMIT_REQUEST_BURST: "3",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1",
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "3"
    })
  })
  afterAll(() => service.close())

  const refusals = (path: string) => [
    ["media type", () => service.fetch(path, { method: "POST", headers: { "content-type": "text/plain" }, body: "hello" }), 415],
    ["declared size", () => service.fetch(path, { method: "POST", json: { pad: "a".repeat(1_100_000) } }), 413],
    ["a NUL", () => service.fetch(path, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":"\\u0000"}' }), 422]
  ] as const

  it.each(["/v1/execute", "/v1/webhooks"])("%s: each refusal takes a token and says so; with none left it is 429", async (path) => {
    const bucket = path === "/v1/execute" ? "execute" : "standard"
    const remaining: Array<string | null> = []
    for (const [what, send, status] of refusals(path)) {
      const response = await send()
      expect(response.status, what).toBe(status)
      expect(response.headers.get("ratelimit-limit"), what).toBe("3")
      remaining.push(response.headers.get("ratelimit-remaining"))
    }
    expect(remaining, bucket).toEqual(["2", "1", "0"])
    for (const [what, send] of refusals(path)) {
      const response = await send()
      expect(response.status, what).toBe(429)
      expect(await codeOf(response)).toBe("rate_limited")
      expect(Number(response.headers.get("retry-after")), what).toBeGreaterThan(0)
    }
  })

  it("a body sent to a route that takes none takes a token too", async () => {
    const fresh = await startService({ SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1", SERVICE_RATE_LIMIT_REQUEST_BURST: "2" })
    try {
      const cancel = () => fresh.fetch("/v1/executions/exe_x/cancel", { method: "POST", json: { a: 1 } })
      const first = await cancel()
      expect(first.status).toBe(422)
      expect(first.headers.get("ratelimit-remaining")).toBe("1")
      expect((await cancel()).headers.get("ratelimit-remaining")).toBe("0")
      expect((await cancel()).status).toBe(429)
    } finally {
      await fresh.close()
    }
  })
})

describe("unknown routes and wrong methods with a key", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({ SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1", SERVICE_RATE_LIMIT_REQUEST_BURST: "3" })
  })
  afterAll(() => service.close())

  it("take a token like any authenticated request (decisions.md section 2), and are 429 once none is left", async () => {
    // Without a valid key an unknown route is simply not found, and no bucket is touched.
    for (const key of [null, "not_a_real_key_0000000001"]) {
      const unknown = await service.fetch("/v1/nope", { key })
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get("ratelimit-remaining")).toBeNull()
    }
    // Ingest reads no key: its wrong method is a plain 405 whatever the key.
    const ingest = await service.fetch("/v1/ingest/trgsub_x/trgsec_y", { method: "GET" })
    expect(ingest.status).toBe(405)
    expect(ingest.headers.get("ratelimit-remaining")).toBeNull()

    const unknown = await service.fetch("/v1/nope")
    expect(unknown.status).toBe(404)
    expect(await codeOf(unknown)).toBe("not_found")
    expect(unknown.headers.get("ratelimit-remaining")).toBe("2")
    const wrongMethod = await service.fetch("/v1/execute", { method: "GET" })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get("allow")).toBe("POST")
    expect(wrongMethod.headers.get("ratelimit-remaining")).toBe("1")
    expect((await service.fetch("/v1/me")).headers.get("ratelimit-remaining")).toBe("0")
    for (const [method, path] of [["GET", "/v1/nope"], ["DELETE", "/v1/me"]] as const) {
      const refused = await service.fetch(path, { method })
      expect(refused.status, `${method} ${path}`).toBe(429)
      expect(await codeOf(refused)).toBe("rate_limited")
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    }
  })
})

// Outside audit (isolation): a project past its rate limit still had every large body read,
// parsed and decoded before the 429, so its uploads held the process every project shares.
// The token is taken on the headers, before a byte of the body is read.
describe("the rate limit on a request with a body", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "3", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" })
  })
  afterAll(() => service.close())

  /** Sends the headers of a `declared`-byte upload and its first kilobyte only; the answer it gets. */
  const partialUpload = (declared: number) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const url = new URL("/v1/files", service.baseUrl)
      const request = httpRequest(url, {
        method: "POST",
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "content-length": String(declared) }
      })
      const timer = setTimeout(() => {
        request.destroy()
        reject(new Error("no answer before the body was sent"))
      }, 5_000)
      request.on("response", (response) => {
        let body = ""
        response.on("data", (chunk: Buffer) => (body += chunk.toString()))
        response.on("end", () => {
          clearTimeout(timer)
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body })
        })
      })
      request.on("error", () => undefined)
      request.write(`{"name":"big.bin","content":"${"A".repeat(1000)}`)
    })

  it("takes one token per request, and refuses past the bucket before reading the body", async () => {
    const first = await service.fetch("/v1/files", { method: "POST", json: { name: "a.txt", content: "aGVsbG8=" } })
    expect(first.status).toBe(201)
    expect(first.headers.get("ratelimit-remaining")).toBe("2")
    const second = await service.fetch("/v1/files", { method: "POST", json: { name: "b.txt", content: "aGVsbG8=" } })
    expect(second.headers.get("ratelimit-remaining")).toBe("1")
    expect((await service.fetch("/v1/me")).status).toBe(200)
    const refused = await partialUpload(20 * 1024 * 1024)
    expect(refused.status).toBe(429)
    expect(refused.headers["connection"]).toBe("close")
    expect(refused.headers["retry-after"]).toMatch(/^\d+$/)
    expect(JSON.parse(refused.body)).toMatchObject({ error: { code: "rate_limited", retryable: true } })
  })
})
