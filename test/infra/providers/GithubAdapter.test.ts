import { assert, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ServerResponse } from "node:http"
import { OutboundHttp, type OutboundResponse } from "../../../infra/outbound/OutboundHttp.ts"
import { githubRateLimitWait, makeGithubAdapter, USER_AGENT } from "../../../infra/providers/GithubAdapter.ts"
import { interpretIssuesAnswer } from "../../../infra/providers/GithubIssues.ts"
import { adapterContext } from "../support/AdapterContext.ts"
import { json, type Recorded, startServer } from "../support/LocalServer.ts"

const TOKEN = "ghp_testtoken"

type Reply = (response: ServerResponse) => void

/**
 * A fake GitHub REST API: 400 unless the request is a well-formed issue creation for a
 * repository it knows; the repository name picks the answer.
 */
const fakeGithub = (replies: Readonly<Record<string, Reply>>) =>
  startServer((request: Recorded, response) => {
    const match = /^\/repos\/octo-org\/([^/]+)\/issues$/.exec(request.path)
    const body: unknown = JSON.parse(request.body || "null")
    const problems = [
      request.method === "POST" ? undefined : "method",
      match === null ? `path ${request.path}` : undefined,
      request.headers.authorization === `Bearer ${TOKEN}` ? undefined : "authorization",
      request.headers.accept === "application/vnd.github+json" ? undefined : "accept",
      request.headers["user-agent"] === USER_AGENT ? undefined : "user-agent",
      request.headers["x-github-api-version"] === "2022-11-28" ? undefined : "api version",
      typeof body === "object" && body !== null && "title" in body ? undefined : "title"
    ].filter((problem) => problem !== undefined)
    const reply = match?.[1] === undefined ? undefined : replies[match[1]]
    if (problems.length > 0 || reply === undefined) return json(response, 400, { message: `fake: ${problems.join("; ")}` })
    reply(response)
  })

const resetIn = (seconds: number) => String(Math.floor(Date.now() / 1000) + seconds)

const replies: Record<string, Reply> = {
  created: (res) =>
    json(res, 201, { id: 1001, number: 42, html_url: "https://github.com/octo-org/created/issues/42", title: "Bug" }),
  unauthorized: (res) => json(res, 401, { message: "Bad credentials" }),
  forbidden: (res) => json(res, 403, { message: "Resource not accessible by integration" }),
  missing: (res) => json(res, 404, { message: "Not Found" }),
  invalid: (res) => json(res, 422, { message: "Validation Failed", errors: [{ field: "title" }] }),
  primary: (res) => json(res, 403, { message: "API rate limit exceeded" }, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": resetIn(120) }),
  secondary: (res) => json(res, 429, { message: "secondary rate limit" }, { "retry-after": "30" }),
  outage: (res) => json(res, 502, { message: "Server Error" })
}

const setup = Effect.gen(function*() {
  const server = yield* fakeGithub(replies)
  const http = yield* OutboundHttp.make({ allowPrivateNetworks: false })
  return { server, adapter: makeGithubAdapter(http, server.url) }
})

const create = (repo: string, credentials: Readonly<Record<string, string>> = { token: TOKEN }) =>
  Effect.gen(function*() {
    const { server, adapter } = yield* setup
    const input = { owner: "octo-org", repo, title: "Bug", body: "It broke" }
    const outcome = yield* adapter.run(input, adapterContext({ credentials })).pipe(
      Effect.match({ onSuccess: (output) => ({ output, error: undefined }), onFailure: (error) => ({ output: undefined, error }) })
    )
    return { server, ...outcome }
  })

describe("github.create_issue", () => {
  it.live("creates the issue and returns number, url and id", () =>
    Effect.gen(function*() {
      const { server, output, error } = yield* create("created")
      assert.isUndefined(error)
      assert.deepStrictEqual(output, {
        number: 42,
        url: "https://github.com/octo-org/created/issues/42",
        id: 1001
      })
      assert.deepStrictEqual(JSON.parse(server.requests[0]?.body ?? ""), { title: "Bug", body: "It broke" })
    }))

  it.live("accepts an api_key connection as the bearer token", () =>
    Effect.gen(function*() {
      const { output, error } = yield* create("created", { apiKey: TOKEN })
      assert.isUndefined(error)
      assert.deepInclude(output, { number: 42 })
    }))

  it.live("turns 401, 403, 404 and 422 into provider_error with GitHub's message", () =>
    Effect.gen(function*() {
      for (const [repo, status, message] of [
        ["unauthorized", 401, "Bad credentials"],
        ["forbidden", 403, "Resource not accessible"],
        ["missing", 404, "Not Found"],
        ["invalid", 422, "Validation Failed"]
      ] as const) {
        const { error } = yield* create(repo)
        assert.strictEqual(error?.code, "provider_error", repo)
        assert.include(error?.message, String(status))
        assert.include(error?.message, message)
      }
    }))

  it.live("turns an exhausted primary rate limit into rate_limited until the reset", () =>
    Effect.gen(function*() {
      const { error } = yield* create("primary")
      assert.strictEqual(error?.code, "rate_limited")
      assert.approximately(error !== undefined && "retryAfter" in error ? error.retryAfter ?? 0 : 0, 120, 2)
    }))

  it.live("turns 429 with Retry-After into rate_limited with that delay", () =>
    Effect.gen(function*() {
      const { error } = yield* create("secondary")
      assert.deepInclude(error, { code: "rate_limited", retryAfter: 30 })
    }))

  it.live("turns 5xx into provider_unavailable", () =>
    Effect.gen(function*() {
      const { error } = yield* create("outage")
      assert.strictEqual(error?.code, "provider_unavailable")
    }))

  it.live("refuses to call GitHub without a token", () =>
    Effect.gen(function*() {
      const { server, error } = yield* create("created", {})
      assert.strictEqual(error?.code, "invalid_input")
      assert.strictEqual(server.requests.length, 0)
    }))
})

const response = (status: number, headers: Record<string, string>, message = "x"): OutboundResponse => ({
  status,
  headers,
  body: new TextEncoder().encode(JSON.stringify({ message })),
  bodyTruncated: false
})

describe("the issues list's answers", () => {
  const now = 1_700_000_000_000
  const answer = (status: number, headers: Record<string, string>, message = "x") => interpretIssuesAnswer(response(status, headers, message), "https://api", now)

  it("a rate limit with a wait given is that wait; without one, a back-off of at least a minute that doubles", () => {
    expect(answer(429, { "retry-after": "5" })).toEqual({ kind: "backoff", waitMs: 5_000, reason: "GitHub answered 429 (rate limited)" })
    expect(answer(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000090" })).toEqual({ kind: "backoff", waitMs: 90_000, reason: "GitHub answered 403 (rate limited)" })
    expect(answer(429, {})).toEqual({ kind: "backoff", minimumMs: 60_000, reason: "GitHub answered 429 (rate limited)" })
    expect(answer(403, {}, "You have exceeded a secondary rate limit")).toEqual({ kind: "backoff", minimumMs: 60_000, reason: "GitHub answered 403 (rate limited)" })
    expect(answer(403, {}, "Must have admin rights")).toEqual({ kind: "refused", status: 403 })
  })

  it("a server error or an answer that is no list is a back-off that says which", () => {
    expect(answer(502, {})).toEqual({ kind: "backoff", waitMs: undefined, reason: "GitHub answered 502" })
    expect(interpretIssuesAnswer({ ...response(200, {}), body: new TextEncoder().encode("{not json[") }, "https://api", now))
      .toEqual({ kind: "backoff", reason: "GitHub's answer was not a JSON list of issues" })
  })
})

describe("githubRateLimitWait", () => {
  const now = 1_700_000_000_000

  it("reads retry-after, the reset time, or a secondary-limit message, and nothing else", () => {
    assert.strictEqual(githubRateLimitWait(response(403, { "retry-after": "5" }), now), 5)
    assert.strictEqual(githubRateLimitWait(response(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000090" }), now), 90)
    assert.strictEqual(githubRateLimitWait(response(403, { "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1699999990" }), now), 0)
    assert.strictEqual(githubRateLimitWait(response(403, {}, "You have exceeded a secondary rate limit"), now), 60)
    assert.strictEqual(githubRateLimitWait(response(429, {}), now), 60)
    assert.isUndefined(githubRateLimitWait(response(403, { "x-ratelimit-remaining": "12", "x-ratelimit-reset": "1700000090" }), now))
    assert.isUndefined(githubRateLimitWait(response(403, {}, "Must have admin rights"), now))
    assert.isUndefined(githubRateLimitWait(response(404, { "retry-after": "5" }), now))
  })
})
