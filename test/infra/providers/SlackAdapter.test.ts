import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ServerResponse } from "node:http"
import { OutboundHttp } from "../../../infra/outbound/OutboundHttp.ts"
import { makeSlackAdapter } from "../../../infra/providers/SlackAdapter.ts"
import { adapterContext } from "../support/AdapterContext.ts"
import { closedPort, json, type Recorded, startServer } from "../support/LocalServer.ts"

const TOKEN = "xoxb-test-token"
const withToken = adapterContext({ credentials: { token: TOKEN } })

type Reply = (response: ServerResponse) => void

/**
 * A fake Slack Web API: it answers 400 `fake_bad_request` unless the request is exactly what
 * chat.postMessage expects, then answers with whatever the channel name asks for.
 */
const fakeSlack = (replies: Readonly<Record<string, Reply>>) =>
  startServer((request: Recorded, response) => {
    const parsed: unknown = (() => {
      try {
        return JSON.parse(request.body)
      } catch {
        return undefined
      }
    })()
    const problems = [
      request.method === "POST" ? undefined : `method ${request.method}`,
      request.path === "/api/chat.postMessage" ? undefined : `path ${request.path}`,
      request.headers.authorization === `Bearer ${TOKEN}` ? undefined : "authorization",
      request.headers["content-type"]?.startsWith("application/json") ? undefined : "content-type"
    ].filter((problem) => problem !== undefined)
    const body = typeof parsed === "object" && parsed !== null ? parsed as Record<string, unknown> : {}
    if (Object.keys(body).toSorted().join(",") !== "channel,text") problems.push("body fields")
    const reply = typeof body["channel"] === "string" ? replies[body["channel"]] : undefined
    if (problems.length > 0 || reply === undefined) {
      return json(response, 400, { ok: false, error: `fake_bad_request: ${problems.join("; ")}` })
    }
    reply(response)
  })

const replies: Record<string, Reply> = {
  C_OK: (res) => json(res, 200, { ok: true, channel: "C_OK", ts: "1700000000.000100", message: { text: "hi" } }),
  C_MISSING: (res) => json(res, 200, { ok: false, error: "channel_not_found" }),
  C_AUTH: (res) => json(res, 200, { ok: false, error: "invalid_auth" }),
  C_BODY_LIMIT: (res) => json(res, 200, { ok: false, error: "ratelimited" }, { "retry-after": "30" }),
  C_429: (res) => json(res, 429, { ok: false, error: "ratelimited" }, { "retry-after": "12" }),
  C_503: (res) => json(res, 503, { ok: false, error: "service_unavailable" }),
  C_500_HTML: (res) => {
    res.writeHead(500, { "content-type": "text/html" })
    res.end("<html>oops</html>")
  },
  C_GARBAGE: (res) => {
    res.writeHead(200, { "content-type": "text/plain" })
    res.end("not json")
  }
}

const setup = Effect.gen(function*() {
  const server = yield* fakeSlack(replies)
  // The client's own policy refuses private networks: the adapter widens it for the configured base URL only.
  const http = yield* OutboundHttp.make({ allowPrivateNetworks: false })
  return { server, adapter: makeSlackAdapter(http, `${server.url}/api`) }
})

const post = (channel: string, context = withToken) =>
  Effect.gen(function*() {
    const { server, adapter } = yield* setup
    const outcome = yield* adapter.run({ channel, text: "hello there" }, context).pipe(
      Effect.match({ onSuccess: (output) => ({ output, error: undefined }), onFailure: (error) => ({ output: undefined, error }) })
    )
    return { ...outcome, server }
  })

describe("slack.post_message", () => {
  it.live("posts the message with the bot token and returns channel and ts", () =>
    Effect.gen(function*() {
      const { output, error, server } = yield* post("C_OK")
      assert.isUndefined(error)
      assert.deepStrictEqual(output, { channel: "C_OK", ts: "1700000000.000100" })
      assert.strictEqual(server.requests.length, 1)
      assert.deepStrictEqual(JSON.parse(server.requests[0]?.body ?? ""), { channel: "C_OK", text: "hello there" })
    }))

  it.live("turns {ok: false, error} into provider_error naming Slack's error", () =>
    Effect.gen(function*() {
      for (const [channel, code] of [["C_MISSING", "channel_not_found"], ["C_AUTH", "invalid_auth"]] as const) {
        const { error } = yield* post(channel)
        assert.strictEqual(error?.code, "provider_error")
        assert.include(error?.message, code)
      }
    }))

  it.live("turns HTTP 429 with Retry-After into rate_limited with retryAfter", () =>
    Effect.gen(function*() {
      const { error } = yield* post("C_429")
      assert.deepInclude(error, { code: "rate_limited", retryAfter: 12 })
    }))

  it.live("turns a `ratelimited` error body into rate_limited", () =>
    Effect.gen(function*() {
      const { error } = yield* post("C_BODY_LIMIT")
      assert.deepInclude(error, { code: "rate_limited", retryAfter: 30 })
    }))

  it.live("turns 5xx into provider_unavailable", () =>
    Effect.gen(function*() {
      for (const channel of ["C_503", "C_500_HTML"]) {
        const { error } = yield* post(channel)
        assert.strictEqual(error?.code, "provider_unavailable", channel)
      }
    }))

  it.live("turns a 200 that is not a Web API reply into provider_error", () =>
    Effect.gen(function*() {
      const { error } = yield* post("C_GARBAGE")
      assert.strictEqual(error?.code, "provider_error")
    }))

  it.live("refuses to call Slack without a token", () =>
    Effect.gen(function*() {
      const { error, server } = yield* post("C_OK", adapterContext({ credentials: { apiKey: "x" } }))
      assert.strictEqual(error?.code, "invalid_input")
      assert.strictEqual(server.requests.length, 0)
    }))

  it.live("reports an unreachable Slack as provider_unavailable", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const http = yield* OutboundHttp.make({ allowPrivateNetworks: false })
      const adapter = makeSlackAdapter(http, `http://127.0.0.1:${port}/api`)
      const error = yield* Effect.flip(adapter.run({ channel: "C_OK", text: "x" }, withToken))
      assert.strictEqual(error.code, "provider_unavailable")
    }))
})
