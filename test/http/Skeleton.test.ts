import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { request as httpRequest } from "node:http"
import { KEY, OTHER_KEY, PINNED_KEY, type InProcessService, startService } from "../support/Service.ts"

let service: InProcessService

beforeAll(async () => {
  service = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "1000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "6000" })
})
afterAll(() => service.close())

const expectEnvelope = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status)
  const requestId = response.headers.get("request-id")
  expect(requestId).toMatch(/^req_[0-9a-z]{32}$/)
  const body = (await response.json()) as { error: Record<string, unknown>; requestId: string }
  expect(body.requestId).toBe(requestId)
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe("string")
  expect(typeof body.error.retryable).toBe("boolean")
  expect(Object.keys(body).toSorted()).toEqual(["error", "requestId"])
  return body
}

describe("edge", () => {
  it("answers health without a key and carries a request id", async () => {
    const response = await service.fetch("/health", { key: null })
    expect(response.status).toBe(200)
    expect(response.headers.get("request-id")).toMatch(/^req_/)
    expect(await response.json()).toEqual({ status: "ok" })
  })

  // decisions.md section 2: unknown routes are 404; no route of the API ends in a slash, and
  // `/v1/files/` read as the list was a file with an empty id, which is 404 (spec, GET /v1/files/:id).
  it("a path with a trailing slash is no route: 404, with or without a key, on public and keyed routes alike", async () => {
    for (const path of ["/health/", "/healthz/", "/readyz/", "/metrics/", "/openapi.json/", "/docs/", "/v1/me/", "/v1/files/", "/v1/executions/", "/v1/webhooks/"]) {
      await expectEnvelope(await service.fetch(path, { key: null }), 404, "not_found")
      await expectEnvelope(await service.fetch(path), 404, "not_found")
    }
    await expectEnvelope(await service.fetch("/v1/execute/", { method: "POST", json: { tool: "demo.echo", userId: "u1" } }), 404, "not_found")
    await expectEnvelope(await service.fetch("/v1/files/file_00000000000000000000000000000000/"), 404, "not_found")
  })

  it("unknown routes are 404 envelopes", async () => {
    await expectEnvelope(await service.fetch("/v1/nothing-here"), 404, "not_found")
    await expectEnvelope(await service.fetch("/", { key: null }), 404, "not_found")
  })

  it("a path with an empty segment is 404, before authentication, with or without a key", async () => {
    await expectEnvelope(await service.fetch("/v1/webhooks//rotate-secret", { method: "DELETE", key: null }), 404, "not_found")
    await expectEnvelope(await service.fetch("/v1/webhooks//rotate-secret", { method: "POST" }), 404, "not_found")
    await expectEnvelope(await service.fetch("/v1/executions//cancel", { method: "POST", key: null }), 404, "not_found")
  })

  // The route exists; the id in it does not (however long): not found, without calling the
  // route itself unknown.
  it("an id too long for the router is 404 not_found about the id, not about the route", async () => {
    for (const path of [`/v1/executions/exe_${"a".repeat(300)}`, `/v1/webhooks/whe_${"a".repeat(300)}/deliveries`]) {
      const response = await service.fetch(path)
      const body = await expectEnvelope(response, 404, "not_found")
      expect(body.error.message, path).not.toContain("route")
    }
  })

  it("a wrong method on a known path is 405 invalid_input with Allow", async () => {
    const response = await service.fetch("/v1/me", { method: "DELETE" })
    expect(response.headers.get("allow")).toBe("GET, HEAD")
    await expectEnvelope(response, 405, "invalid_input")
  })

  it("Allow names HEAD wherever GET is allowed, as HEAD is answered there", async () => {
    const files = await service.fetch("/v1/files", { method: "PUT" })
    expect(files.headers.get("allow")).toBe("POST, GET, HEAD")
    await expectEnvelope(files, 405, "invalid_input")
    const docs = await fetch(`${service.baseUrl}/docs`, { method: "POST" })
    expect(docs.headers.get("allow")).toBe("GET, HEAD")
    const execute = await service.fetch("/v1/execute", { method: "GET" })
    expect(execute.headers.get("allow")).toBe("POST")
  })

  // JSON text is UTF-8 (RFC 8259 section 8.1): bytes that are not are no JSON text, rather than
  // replacement characters stored in their place.
  it("a body that is not UTF-8 is 400 invalid_input; on ingest a bad credential still comes first (404)", async () => {
    const bytes = Buffer.concat([Buffer.from(`{"tool":"demo.echo","userId":"u","input":{"s":"`), Buffer.from([0xff, 0xfe]), Buffer.from(`"}}`)])
    const refused = await service.fetch("/v1/execute", { method: "POST", headers: { "content-type": "application/json" }, body: bytes })
    await expectEnvelope(refused, 400, "invalid_input")
    const ingest = await service.fetch("/v1/ingest/trgsub_nope/trgsec_nope", { method: "POST", key: null, headers: { "content-type": "application/json" }, body: bytes })
    expect(ingest.status).toBe(404)
  })

  it("a body that is not JSON typed is 415", async () => {
    const response = await service.fetch("/v1/me", { method: "POST", body: "hello", headers: { "content-type": "text/plain" } })
    // The route exists only for GET, so the method is checked first.
    await expectEnvelope(response, 405, "invalid_input")
  })

  // What the body's headers say it is must be what the service reads: JSON in UTF-8, not encoded.
  it("a JSON body in another charset or with a content coding is 415, not read as plain UTF-8 JSON", async () => {
    const body = JSON.stringify({ tool: "demo.echo", userId: "u", input: {} })
    for (const headers of [
      { "content-type": "application/json; charset=utf-16" },
      { "content-type": "application/json; charset=latin1" },
      { "content-type": "application/json", "content-encoding": "gzip" },
      { "content-type": "application/json", "content-encoding": "br" }
    ]) {
      const response = await service.fetch("/v1/execute", { method: "POST", headers, body })
      await expectEnvelope(response, 415, "invalid_input")
    }
    for (const headers of [
      { "content-type": "application/json; charset=utf-8" },
      { "content-type": "application/json; charset=\"UTF-8\"" },
      // The WHATWG Encoding standard's other labels of UTF-8.
      { "content-type": "application/json; charset=utf8" },
      { "content-type": "application/json; charset=unicode-1-1-utf-8" },
      { "content-type": "application/json", "content-encoding": "identity" }
    ]) {
      expect((await service.fetch("/v1/execute", { method: "POST", headers, body })).status, JSON.stringify(headers)).toBe(200)
    }
  })

  // Outside audit: `Transfer-Encoding: gzip, chunked` was read as if only chunked, so a plain
  // body was taken and a gzipped one was a misleading 400 "not valid JSON".
  it("a body with a transfer coding besides chunked is 415, on /v1 and /mcp; chunked alone is read", async () => {
    const url = new URL(service.baseUrl)
    const send = (path: string, transferEncoding: string, extra: Record<string, string> = {}) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest({
          host: url.hostname,
          port: url.port,
          path,
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "transfer-encoding": transferEncoding, ...extra }
        }, (res) => {
          let body = ""
          res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk)).on("end", () => resolve({ status: res.statusCode ?? 0, body }))
        })
        req.on("error", reject)
        req.end(JSON.stringify({ tool: "demo.echo", userId: "u", input: {} }))
      })
    for (const coding of ["gzip, chunked", "deflate, chunked"]) {
      const refused = await send("/v1/execute", coding)
      expect(refused.status, coding).toBe(415)
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: "invalid_input", message: "The request body must not have a transfer coding other than chunked." } })
      const mcp = await send("/mcp", coding, { accept: "application/json, text/event-stream" })
      expect(mcp.status, coding).toBe(415)
    }
    expect((await send("/v1/execute", "chunked")).status).toBe(200)
  })

  it("a client that hangs up halfway through a body leaves the service answering", async () => {
    const url = new URL(service.baseUrl)
    const halfSent = Array.from({ length: 5 }, () =>
      new Promise<void>((resolve) => {
        const req = httpRequest({
          host: url.hostname,
          port: url.port,
          path: "/v1/execute",
          method: "POST",
          headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "content-length": "1000" }
        })
        req.on("error", () => resolve())
        req.on("close", () => resolve())
        req.write(`{"tool":"demo.echo","input":{"message":"`, () => setTimeout(() => req.destroy(), 20))
      }))
    await Promise.all(halfSent)
    const response = await service.fetch("/v1/execute", {
      method: "POST",
      body: JSON.stringify({ tool: "demo.echo", input: { message: "whole" }, userId: "u_edge" }),
      headers: { "content-type": "application/json" }
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ status: "succeeded", output: { message: "whole" } })
  })

  it("a client that waits for 100 Continue gets it, then its answer", async () => {
    const url = new URL(service.baseUrl)
    const body = JSON.stringify({ tool: "demo.echo", input: { message: "continued" }, userId: "u_edge" })
    const answer = await new Promise<{ status: number | undefined; text: string; continued: boolean }>((resolve, reject) => {
      let continued = false
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: "/v1/execute",
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          expect: "100-continue"
        }
      }, (res) => {
        let text = ""
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
        res.on("end", () => resolve({ status: res.statusCode, text, continued }))
      })
      req.on("error", reject)
      // The body goes only after the server's 100 Continue; without it this request would hang.
      req.on("continue", () => {
        continued = true
        req.end(body)
      })
    })
    expect(answer.continued).toBe(true)
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.text)).toMatchObject({ status: "succeeded", output: { message: "continued" } })
  })

  it("request ids differ per request", async () => {
    const a = await service.fetch("/v1/me")
    const b = await service.fetch("/v1/me")
    expect(a.headers.get("request-id")).not.toBe(b.headers.get("request-id"))
  })

  // Answers are per key and some carry a secret once (a signing secret, an ingest URL): no cache
  // on the way (a proxy, the browser's) may keep one.
  it("answers API routes with Cache-Control: no-store, refusals and secrets included", async () => {
    const created = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/hook", events: ["execution.completed"] } })
    expect(created.status).toBe(201)
    expect(created.headers.get("cache-control")).toBe("no-store")
    const { endpointId } = await created.json() as { endpointId: string }
    const rotated = await service.fetch(`/v1/webhooks/${endpointId}/rotate-secret`, { method: "POST" })
    expect(rotated.headers.get("cache-control")).toBe("no-store")
    for (const answer of [await service.fetch("/v1/me"), await service.fetch("/v1/me", { key: null }), await service.fetch("/v1/nope")]) {
      expect(answer.headers.get("cache-control")).toBe("no-store")
    }
  })

  it("serves the OpenAPI document and the docs UI", async () => {
    const spec = await service.fetch("/openapi.json", { key: null })
    expect(spec.status).toBe(200)
    const document = (await spec.json()) as { openapi: string; paths: Record<string, unknown> }
    expect(document.openapi).toMatch(/^3\./)
    expect(Object.keys(document.paths)).toContain("/v1/me")
    const docs = await service.fetch("/docs", { key: null })
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
  })

  it("a declared Content-Length over the ceiling is refused with 413 before reading", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(`${service.baseUrl}/v1/me`)
      const req = httpRequest({
        host: url.hostname,
        port: url.port,
        path: "/v1/me",
        method: "GET",
        headers: { "content-type": "application/json", "content-length": String(50 * 1024 * 1024), authorization: `Bearer ${KEY}` }
      }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on("error", reject)
      req.write("{")
    })
    expect(status).toBe(413)
  })
})

describe("authentication", () => {
  it("no key is 401 auth_missing", async () => {
    await expectEnvelope(await service.fetch("/v1/me", { key: null }), 401, "auth_missing")
  })

  it("a non-bearer scheme is 401 auth_missing", async () => {
    const response = await service.fetch("/v1/me", { key: null, headers: { authorization: `Basic ${KEY}` } })
    await expectEnvelope(response, 401, "auth_missing")
  })

  it("an unknown key is 401 auth_expired", async () => {
    await expectEnvelope(await service.fetch("/v1/me", { key: "not_a_real_key_000000" }), 401, "auth_expired")
  })

  it("identifies unpinned and pinned keys", async () => {
    expect(await (await service.fetch("/v1/me")).json()).toMatchObject({ projectId: "proj_test" })
    expect(await (await service.fetch("/v1/me", { key: PINNED_KEY })).json()).toMatchObject({
      projectId: "proj_test",
      pinnedUserId: "user_1"
    })
    expect(await (await service.fetch("/v1/me", { key: OTHER_KEY })).json()).toMatchObject({ projectId: "proj_other" })
  })

  it("a pinned key naming another user in X-Service-User-Id is 403", async () => {
    const response = await service.fetch("/v1/me", { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } })
    await expectEnvelope(response, 403, "auth_insufficient_scope")
    const own = await service.fetch("/v1/me", { key: PINNED_KEY, headers: { "x-service-user-id": "user_1" } })
    expect(own.status).toBe(200)
  })

  it("a malformed X-Service-User-Id is 422", async () => {
    const response = await service.fetch("/v1/me", { headers: { "x-service-user-id": "bad user!" } })
    await expectEnvelope(response, 422, "invalid_input")
  })

  it("authentication comes before anything else: a bad key with a bad body is 401", async () => {
    const response = await service.fetch("/v1/me", { key: "nope_nope_nope_nope_1", headers: { "x-service-user-id": "bad user!" } })
    await expectEnvelope(response, 401, "auth_expired")
  })
})

describe("rate limits", () => {
  it("a project's standard bucket empties, answers 429 with headers, and is shared by all its keys", async () => {
    const limited = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "3", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" })
    try {
      const first = await limited.fetch("/v1/me")
      expect(first.status).toBe(200)
      expect(first.headers.get("ratelimit-limit")).toBe("3")
      expect(first.headers.get("ratelimit-remaining")).toBe("2")
      const reset = Number(first.headers.get("ratelimit-reset"))
      expect(reset).toBeGreaterThan(Date.now() / 1000)
      expect((await limited.fetch("/v1/me", { key: PINNED_KEY })).status).toBe(200)
      expect((await limited.fetch("/v1/me")).headers.get("ratelimit-remaining")).toBe("0")
      const denied = await limited.fetch("/v1/me", { key: PINNED_KEY })
      expect(denied.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
      expect(denied.headers.get("ratelimit-remaining")).toBe("0")
      const body = await expectEnvelope(denied, 429, "rate_limited")
      expect(body.error.retryable).toBe(true)
      expect(body.error.retryAfter).toBeGreaterThanOrEqual(1)
      // Another project has its own bucket.
      expect((await limited.fetch("/v1/me", { key: OTHER_KEY })).status).toBe(200)
    } finally {
      await limited.close()
    }
  })

  it("the daily execution quota refuses execute past it with its own headers, and leaves other routes alone", async () => {
    const limited = await startService({ SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "2", SERVICE_RATE_LIMIT_EXECUTE_BURST: "3" })
    const execute = () => limited.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echo", input: {}, userId: "u1" } })
    try {
      for (let i = 0; i < 2; i++) expect((await execute()).status).toBe(200)
      const denied = await execute()
      const body = await expectEnvelope(denied, 429, "rate_limited")
      const midnight = new Date()
      midnight.setUTCHours(24, 0, 0, 0)
      expect(denied.headers.get("ratelimit-limit")).toBe("2")
      expect(denied.headers.get("ratelimit-remaining")).toBe("0")
      expect(Number(denied.headers.get("ratelimit-reset"))).toBe(midnight.getTime() / 1000)
      expect(body.error.retryAfter).toBeGreaterThanOrEqual(1)
      expect(denied.headers.get("retry-after")).toBe(String(body.error.retryAfter))
      // The refusal names the quota, not the execute bucket (which still has tokens).
      expect(body.error.message).toBe("The project's daily execution quota is used up; it resets at 00:00 UTC.")
      // Other routes take from the standard bucket, failures included.
      // Outside audit: refusals past the quota drained the execute bucket, and those the bucket
      // then refused said "retry in 2 s" until midnight. Every refusal names the quota's wait.
      for (let i = 0; i < 4; i++) {
        const again = await execute()
        const refused = await expectEnvelope(again, 429, "rate_limited")
        expect(refused.error.message).toBe("The project's daily execution quota is used up; it resets at 00:00 UTC.")
        expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(Number(body.error.retryAfter) - 5)
        expect(again.headers.get("ratelimit-limit")).toBe("2")
      }
      const missing = await limited.fetch("/v1/executions/exe_01kab2c3d4e5f6g7h8j9k0m1n2")
      await expectEnvelope(missing, 404, "not_found")
      expect(missing.headers.get("ratelimit-limit")).not.toBe("2")
      expect(Number(missing.headers.get("ratelimit-remaining"))).toBeGreaterThan(0)
    } finally {
      await limited.close()
    }
  })
})
