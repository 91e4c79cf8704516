/**
 * Property-based requests against the running service, over every route `http/Server.ts`
 * declares (new routes are fuzzed as they are added) and made-up paths. Whatever comes in, the
 * answer is a success or a normalized error with the status its code implies, never a 500,
 * always with a Request-Id, and always in time.
 */
import fc from "fast-check"
import { unstorableText } from "../../domain/Storable.ts"
import { METHODS, request as httpRequest } from "node:http"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ErrorCode, isRetryable } from "../../domain/Errors.ts"
import type { Route } from "../../http/server/Edge.ts"
import { routes } from "../../http/server/Server.ts"
import { type InProcessService, KEY, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"
import { type FuzzRequest, fuzzRequest } from "./support/FuzzRequests.ts"

const RUNS = Number(process.env.FUZZ_RUNS ?? 300)
/** The property's time limit grows with FUZZ_RUNS (a request takes 2-3 ms here, 10 ms allowed). */
const RUN_TIMEOUT_MS = Math.max(120_000, RUNS * 10)
const REQUEST_TIMEOUT_MS = 15_000
const BODY_LIMIT = 1024 * 1024
/** Routes with a body ceiling of their own (http/Server.ts). */
const OWN_CEILING = new Set(["POST /v1/files"])

/** The statuses each code may come with (decisions.md section 2, plus the edge's own). */
const STATUSES: Record<ErrorCode, ReadonlyArray<number>> = {
  invalid_input: [400, 405, 409, 413, 415, 422, 431],
  auth_missing: [401],
  auth_expired: [401],
  auth_insufficient_scope: [403],
  not_found: [404],
  timeout: [408, 504],
  rate_limited: [429],
  provider_unavailable: [502, 503],
  provider_error: [502],
  not_supported: [501],
  execution_interrupted: [],
  execution_cancelled: [409]
}

interface Answer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: string
}

const send = (baseUrl: string, req: FuzzRequest): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl)
    const headers: Record<string, string> = { ...req.headers }
    // Node frames a body without Content-Length as chunked only when told to (not for GET by default).
    if (req.body !== undefined) {
      if (req.chunked) headers["transfer-encoding"] = "chunked"
      else headers["content-length"] = String(Buffer.byteLength(req.body))
    }
    const outgoing = httpRequest(
      { host: url.hostname, port: url.port, method: req.method, path: req.path, headers, agent: false },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }))
        res.on("error", reject)
      }
    )
    outgoing.setTimeout(REQUEST_TIMEOUT_MS, () => outgoing.destroy(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms`)))
    // A refusal may close the connection while the rest of a large body is still being written.
    let answered = false
    outgoing.on("response", () => (answered = true))
    outgoing.on("error", (error) => {
      if (!answered) reject(error)
    })
    if (req.body === undefined) return void outgoing.end()
    if (!req.chunked) return void outgoing.end(req.body)
    const bytes = Buffer.from(req.body)
    for (let offset = 0; offset < bytes.length; offset += 64 * 1024) outgoing.write(bytes.subarray(offset, offset + 64 * 1024))
    outgoing.end()
  })

/** The same path rules as the edge: parameters are one segment, and no trailing slash. */
const matches = (route: Route, path: string): boolean => {
  const source = "^" + route.path.split("/").map((part) =>
    part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  ).join("/") + "$"
  return new RegExp(source).test(path)
}

let service: InProcessService
let publicRoutes: ReadonlyArray<Route>
/** `/openapi.json`'s path items, as patterns: every error answer's status must be declared there. */
let documented: ReadonlyArray<{ readonly pattern: RegExp; readonly item: Record<string, { readonly responses: Record<string, unknown> }> }>

beforeAll(async () => {
  service = await startService({
    SERVICE_RATE_LIMIT_REQUEST_BURST: "1000000",
    SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1000000",
    SERVICE_RATE_LIMIT_EXECUTE_BURST: "1000000",
    SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000"
  })
  // A route is public when it answers something other than 401 to a request without a key.
  const probes = await Promise.all(routes.map(async (route) => {
    const path = route.path.split("/").map((part) => (part.startsWith(":") ? "probe" : part)).join("/")
    const answer = await send(service.baseUrl, { method: route.method, path, headers: {}, body: undefined, chunked: false })
    return { route, open: answer.status !== 401 }
  }))
  publicRoutes = probes.filter((p) => p.open).map((p) => p.route)
  const document = await (await fetch(`${service.baseUrl}/openapi.json`)).json() as { paths: Record<string, never> }
  documented = Object.entries(document.paths).map(([template, item]) => ({
    pattern: new RegExp("^" + template.replace(/\{\w+\}/g, "[^/]+") + "/?$"),
    item
  }))
})

/** The statuses the document declares for a request: its operation's, or (405) any of its path's. */
const declaredStatuses = (method: string, path: string): ReadonlyArray<string> | undefined => {
  const item = documented.find((entry) => entry.pattern.test(path))?.item
  if (item === undefined) return undefined
  const operation = item[method === "HEAD" ? "get" : method.toLowerCase()]
  return operation !== undefined ? Object.keys(operation.responses) : Object.values(item).flatMap((op) => Object.keys(op.responses))
}
afterAll(() => service.close())

const VALID_KEYS = new Set([KEY, PINNED_KEY, OTHER_KEY])
/** The scheme is case-insensitive and may be followed by several spaces (RFC 6750 `1*SP`). */
const presentsValidKey = (authorization: string | undefined): boolean => {
  const match = /^bearer +(\S+)\s*$/i.exec(authorization?.trim() ?? "")
  return match !== null && VALID_KEYS.has(match[1] ?? "")
}

const checkAnswer = (req: FuzzRequest, answer: Answer) => {
  const context = `${req.method} ${req.path.slice(0, 200)} -> ${answer.status} ${answer.body.slice(0, 300)}`
  expect(answer.headers["request-id"], context).toMatch(/^req_[0-9a-z]{32}$/)
  expect(answer.status, context).not.toBe(500)
  expect([2, 4, 5], context).toContain(Math.floor(answer.status / 100))

  const path = req.path.split("?", 1)[0] ?? "/"
  const declared = routes.filter((route) => matches(route, path))
  // An empty body sent with Content-Length: 0 is no body at all (and its declared type is ignored).
  const bodyPresent = req.body !== undefined && (req.chunked || req.body !== "")
  const jsonType = (req.headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase() === "application/json"
  // HEAD is answered wherever GET is.
  const serves = (route: Route) => route.method === req.method || (req.method === "HEAD" && route.method === "GET")
  // Node's parser refuses methods it does not know, and raw bytes outside ASCII in the target.
  const parsable = METHODS.includes(req.method) && /^[\x21-\x7e]*$/.test(req.path)
  /** A route that takes no key (ingest, the API's description): its body is judged at once. */
  const open = publicRoutes.some((route) => serves(route) && matches(route, path))
  const judged = open || presentsValidKey(req.headers.authorization)
  /** A pinned key on a project-wide route: 403 whatever its body, which is left unread. */
  const outOfScope = /^bearer +test_key_pinned_u1_0001\s*$/i.test(req.headers.authorization?.trim() ?? "") &&
    declared.some((route) => serves(route) && route.unpinnedOnly === true)
  if (!parsable) expect(answer.status, context).toBe(400)
  else if (declared.length === 0) expect(answer.status, context).toBe(404)
  else if (!declared.some(serves)) {
    expect(answer.status, context).toBe(405)
    expect(String(answer.headers.allow ?? ""), context).toContain(declared[0]?.method ?? "")
  } else if (!open && !presentsValidKey(req.headers.authorization)) {
    // Without a valid key nothing of the body is judged: 401 whatever it is (decisions.md section 2);
    // or 429 once this address has sent more unknown keys than the gate's bucket holds (120 a
    // minute, http/server/Gate.ts), which a run of more than a few hundred requests does. Without
    // a valid key no other bucket applies, and a HEAD answer has no body to tell them apart.
    expect([401, 429], context).toContain(answer.status)
  } else if (!bodyPresent && req.headers["x-service-user-id"] !== undefined && !publicRoutes.some((route) => serves(route) && matches(route, path))) {
    // Authenticated: the named user is checked next, for every route (the parser trims the value).
    const named = req.headers["x-service-user-id"].replace(/^[ \t]+|[ \t]+$/g, "")
    const pinned = /^bearer +test_key_pinned_u1_0001\s*$/i.test(req.headers.authorization?.trim() ?? "")
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(named)) expect(answer.status, context).toBe(422)
    else if (pinned && named !== "user_1") expect(answer.status, context).toBe(403)
  }
  // What the log cannot keep is refused once the key is known, before any service sees it. Not on
  // a route with its own credential (ingest): it reads no key, and judges its credential first
  // (a bad one is the same 404 whatever the body), then the body.
  const ownCredential = declared.some((route) => serves(route) && route.ownCredential === true)
  if (
    bodyPresent && jsonType && parsable && declared.some(serves) && !ownCredential && presentsValidKey(req.headers.authorization) && !outOfScope &&
    Buffer.byteLength(req.body ?? "") <= BODY_LIMIT && unstorableText(req.body ?? "") !== undefined
  ) {
    expect(answer.status, context).toBe(422)
  }
  // Only application/json bodies: the API would refuse `+json` and other types in plain text. Not
  // ingest, which reads a provider's body as JSON whatever its type (decisions.md section 5).
  if (bodyPresent && !jsonType && declared.some(serves) && parsable && judged && !outOfScope && !ownCredential) expect(answer.status, context).toBe(415)
  if (bodyPresent && Buffer.byteLength(req.body ?? "") > BODY_LIMIT && declared.some(serves) && parsable && !OWN_CEILING.has(`${req.method} ${path.replace(/\/$/, "")}`)) {
    // Without a valid key such a request is a 401 (above).
    if (judged && !outOfScope) expect(ownCredential ? [413] : [413, 415], context).toContain(answer.status)
  }

  // The status is one the OpenAPI document declares for this operation (documented routes only:
  // not /mcp, the dashboard, or the document and its page themselves).
  const documentedStatuses = parsable && declared.length > 0 ? declaredStatuses(req.method, path) : undefined
  if (documentedStatuses !== undefined) expect(documentedStatuses, context).toContain(String(answer.status))

  if (answer.status < 400 || req.method === "HEAD") return
  const parsed = JSON.parse(answer.body) as { error: Record<string, unknown>; requestId: unknown }
  expect(Object.keys(parsed).toSorted(), context).toEqual(["error", "requestId"])
  expect(parsed.requestId, context).toBe(answer.headers["request-id"])
  const error = parsed.error
  const keys = Object.keys(error).toSorted()
  expect([["code", "message", "retryable"], ["code", "message", "retryAfter", "retryable"]], context).toContainEqual(keys)
  const code = error.code as ErrorCode
  expect(ErrorCode.literals, context).toContain(code)
  expect(STATUSES[code], context).toContain(answer.status)
  expect(typeof error.message === "string" && error.message.length > 0, context).toBe(true)
  expect(error.retryable, context).toBe(isRetryable(code))
  if (answer.status === 429) {
    expect(Number.isInteger(error.retryAfter) && (error.retryAfter as number) >= 1, context).toBe(true)
    expect(answer.headers["retry-after"], context).toBe(String(error.retryAfter))
  }
}

describe("fuzzing the HTTP surface", () => {
  it("the routes under test include the skeleton's", () => {
    const declared = routes.map((r) => `${r.method} ${r.path}`)
    expect(declared).toEqual(expect.arrayContaining(["GET /health", "GET /v1/me"]))
    expect(publicRoutes.map((r) => r.path)).toEqual(expect.arrayContaining(["/health", "/openapi.json", "/docs"]))
    expect(publicRoutes.map((r) => r.path)).not.toContain("/v1/me")
  })

  it(`${RUNS} arbitrary requests: normalized answers, no 500, no hang`, async () => {
    await fc.assert(
      fc.asyncProperty(fuzzRequest(routes), async (req) => {
        checkAnswer(req, await send(service.baseUrl, req))
      }),
      {
        numRuns: RUNS,
        // A failure's report names its seed: FUZZ_SEED replays that run.
        ...(process.env.FUZZ_SEED === undefined ? {} : { seed: Number(process.env.FUZZ_SEED) }),
        endOnFailure: true,
        // Counterexamples may hold megabyte bodies: report them shortened.
        reporter: (details) => {
          if (!details.failed) return
          const example = JSON.stringify(details.counterexample, (_key, value: unknown) =>
            typeof value === "string" && value.length > 300 ? `${value.slice(0, 300)}… (${value.length} chars)` : value)
          throw new Error(`seed ${details.seed}, path ${details.counterexamplePath}: ${example}\n${String(details.errorInstance)}`)
        }
      }
    )
    // The service still answers normally afterwards.
    const me = await service.fetch("/v1/me")
    expect(me.status).toBe(200)
  }, RUN_TIMEOUT_MS)
})

/** Writes raw bytes on a fresh connection and returns everything the server sends before closing. */
const raw = (bytes: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const url = new URL(service.baseUrl)
    const socket = connect(Number(url.port), url.hostname, () => socket.end(bytes))
    let out = ""
    socket.setTimeout(REQUEST_TIMEOUT_MS, () => socket.destroy(new Error("no answer")))
    socket.on("data", (chunk: Buffer) => (out += chunk.toString()))
    socket.on("close", () => resolve(out))
    socket.on("error", (error) => (out === "" ? reject(error) : resolve(out)))
  })

describe("content types and paths", () => {
  it("a body that is not application/json is a 415 envelope, `+json` types included", async () => {
    const route = routes.find((r) => ["POST", "PUT", "PATCH", "DELETE"].includes(r.method))
    if (route === undefined) return
    const path = route.path.split("/").map((part) => (part.startsWith(":") ? "x" : part)).join("/")
    for (const type of ["application/merge-patch+json", "text/plain", "application/jsonx"]) {
      const answer = await send(service.baseUrl, { method: route.method, path, headers: { authorization: `Bearer ${KEY}`, "content-type": type }, body: "{}", chunked: false })
      expect(answer.status, type).toBe(415)
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "invalid_input" }, requestId: answer.headers["request-id"] })
    }
  })

  it("a path with broken percent-encoding still authenticates, then is not found", async () => {
    for (const path of ["/v1/connections/%e9", "/v1/files/%C3%28", "/v1/connections/%zz"]) {
      const anonymous = await send(service.baseUrl, { method: "GET", path, headers: {}, body: undefined, chunked: false })
      expect(anonymous.status, path).toBe(401)
      const answer = await send(service.baseUrl, { method: "GET", path, headers: { authorization: `Bearer ${KEY}` }, body: undefined, chunked: false })
      expect(answer.status, path).toBe(404)
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "not_found" }, requestId: answer.headers["request-id"] })
    }
  })
  it("`;` and `#` in a path are part of their segment, as the route table reads them", async () => {
    const authorized = { authorization: `Bearer ${KEY}` }
    for (const path of ["/v1/connections/a;b=c", "/v1/executions/a#b", "/v1/executions/exe_1;x/cancel"]) {
      const method = path.endsWith("/cancel") ? "POST" : "GET"
      const anonymous = await send(service.baseUrl, { method, path, headers: {}, body: undefined, chunked: false })
      expect(anonymous.status, path).toBe(401)
      const answer = await send(service.baseUrl, { method, path, headers: authorized, body: undefined, chunked: false })
      expect(answer.status, path).toBe(404)
      expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "not_found" }, requestId: answer.headers["request-id"] })
      expect(JSON.parse(answer.body).error.message, path).not.toBe("No such route.")
    }
    // The acting user is checked before the id, as on any other path of the route.
    const cancel = await send(service.baseUrl, {
      method: "POST",
      path: "/v1/executions/a;b=c/cancel",
      headers: { ...authorized, "x-service-user-id": " " },
      body: undefined,
      chunked: false
    })
    expect(cancel.status).toBe(422)
  })
})

describe("requests Node's parser refuses", () => {
  it.each([
    ["an unknown method", "BREW /v1/me HTTP/1.1\r\nhost: x\r\n\r\n", 400, "invalid_input"],
    ["a request line that is not HTTP", "hello there\r\n\r\n", 400, "invalid_input"],
    ["a header without a colon", "GET /v1/me HTTP/1.1\r\nhost: x\r\nbroken header\r\n\r\n", 400, "invalid_input"],
    ["headers past the size limit", `GET /v1/me HTTP/1.1\r\nhost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "invalid_input"],
    ["a Content-Length that is not a number", "POST /v1/me HTTP/1.1\r\nhost: x\r\ncontent-length: abc\r\n\r\n", 400, "invalid_input"]
  ])("%s gets an envelope with a request id", async (_name, bytes, status, code) => {
    const answer = await raw(bytes)
    const [head = "", body = ""] = answer.split("\r\n\r\n", 2)
    expect(head.split("\r\n")[0]).toBe(`HTTP/1.1 ${status} ${status === 431 ? "Request Header Fields Too Large" : "Bad Request"}`)
    const requestId = /^request-id: (req_[0-9a-z]{32})$/m.exec(head)?.[1]
    expect(requestId).toBeDefined()
    expect(head).toMatch(/^cache-control: no-store$/m)
    expect(JSON.parse(body)).toEqual({ error: { code, message: expect.any(String), retryable: false }, requestId })
  })
})
