import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { OutgoingHttpHeaders, ServerResponse } from "node:http"
import { type Resolver, validateUrl } from "../../../infra/outbound/AddressGuard.ts"
import { OutboundHttp, type OutboundHttpError, type OutboundHttpOptions, type OutboundRequest } from "../../../infra/outbound/OutboundHttp.ts"
import { closedPort, latch, startServer } from "../support/LocalServer.ts"

/**
 * A handler that writes `total` bytes in 64 KiB chunks as fast as the client reads them, and
 * tells `closed` how many it had written when the connection closed.
 */
const pumping = (total: number, headers: OutgoingHttpHeaders, closed: { readonly resolve: (written: number) => void }) =>
  (_req: unknown, res: ServerResponse) => {
    let written = 0
    res.writeHead(200, headers)
    const chunk = Buffer.alloc(64 * 1024, 97)
    const pump = () => {
      while (written < total) {
        written += chunk.length
        if (!res.write(chunk)) return void res.once("drain", pump)
      }
      res.end()
    }
    res.on("close", () => closed.resolve(written))
    pump()
  }

const client = (options: OutboundHttpOptions) => OutboundHttp.make(options)

const get = (url: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({
  method: "GET",
  url,
  timeoutMs: 5_000,
  maxBodyBytes: 1024,
  ...extra
})

const failureReason = <A>(effect: Effect.Effect<A, OutboundHttpError>) =>
  effect.pipe(
    Effect.flip,
    Effect.map((error) => error.reason)
  )

const stub = (...addresses: ReadonlyArray<string>): Resolver => async () =>
  addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))

const notFound: Resolver = () => Promise.reject(Object.assign(new Error("nope"), { code: "ENOTFOUND" }))

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("OutboundHttp", () => {
  it.live("sends the method, headers and body and returns status, headers and body", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => {
        res.writeHead(201, { "x-reply": "yes", "content-type": "text/plain" })
        res.end("created")
      })
      const http = yield* client({ allowPrivateNetworks: true })
      const response = yield* http.request({
        method: "POST",
        url: `${server.url}/things?x=1`,
        headers: { "content-type": "application/json", "x-custom": "abc" },
        body: JSON.stringify({ a: 1 }),
        timeoutMs: 5_000,
        maxBodyBytes: 1024
      })
      assert.strictEqual(response.status, 201)
      assert.strictEqual(response.headers["x-reply"], "yes")
      assert.strictEqual(text(response.body), "created")
      assert.isFalse(response.bodyTruncated)
      const seen = server.requests[0]
      assert.strictEqual(seen?.method, "POST")
      assert.strictEqual(seen?.path, "/things?x=1")
      assert.strictEqual(seen?.headers["x-custom"], "abc")
      assert.strictEqual(seen?.body, "{\"a\":1}")
    }))

  it.live("returns a redirect as it is and never follows it", () =>
    Effect.gen(function*() {
      const server = yield* startServer((req, res) => {
        if (req.path === "/start") {
          res.writeHead(302, { location: "/elsewhere" })
          res.end()
        } else {
          res.end("followed")
        }
      })
      const http = yield* client({ allowPrivateNetworks: true })
      const response = yield* http.request(get(`${server.url}/start`))
      assert.strictEqual(response.status, 302)
      assert.strictEqual(response.headers["location"], "/elsewhere")
      assert.deepStrictEqual(server.requests.map((r) => r.path), ["/start"])
    }))

  it.live("times out a receiver that never answers", () =>
    Effect.gen(function*() {
      const server = yield* startServer(() => {})
      const http = yield* client({ allowPrivateNetworks: true })
      const started = Date.now()
      const reason = yield* failureReason(http.request(get(server.url, { timeoutMs: 300 })))
      assert.strictEqual(reason, "timeout")
      assert.isBelow(Date.now() - started, 3_000)
    }))

  it.live("stops reading at maxBodyBytes and closes the stream instead of draining it", () =>
    Effect.gen(function*() {
      const total = 64 * 1024 * 1024
      const finished = latch<number>()
      const server = yield* startServer(pumping(total, { "content-type": "application/octet-stream" }, finished))
      const http = yield* client({ allowPrivateNetworks: true })
      const response = yield* http.request(get(server.url, { maxBodyBytes: 1000 }))
      assert.strictEqual(response.body.byteLength, 1000)
      assert.isTrue(response.bodyTruncated)
      const written = yield* Effect.promise(() => finished.promise).pipe(Effect.timeout(5_000))
      assert.isBelow(written, total / 2, "the server should see the connection closed before it wrote half")
    }))

  it.live("reads nothing when maxBodyBytes is 0", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("some body"))
      const http = yield* client({ allowPrivateNetworks: true })
      const response = yield* http.request(get(server.url, { maxBodyBytes: 0 }))
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body.byteLength, 0)
      assert.isTrue(response.bodyTruncated)
    }))

  it.live("drains a small unread body behind the caller, so the connection is reused", () =>
    Effect.gen(function*() {
      // The body follows the headers a moment later: the caller has its answer before it arrives.
      const server = yield* startServer((_req, res) => {
        res.writeHead(200, { "content-length": "2" })
        res.flushHeaders()
        setTimeout(() => res.end("ok"), 20)
      })
      const http = yield* client({ allowPrivateNetworks: true })
      for (let i = 0; i < 5; i++) {
        const response = yield* http.request(get(server.url, { method: "POST", body: "{}", maxBodyBytes: 0 }))
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.body.byteLength, 0)
        yield* Effect.sleep(100)
      }
      assert.strictEqual(server.connections(), 1)
    }))

  it.live("cuts off an unread body too large to drain, without waiting for it", () =>
    Effect.gen(function*() {
      const total = 50 * 1024 * 1024
      const finished = latch<number>()
      const server = yield* startServer(pumping(total, { "content-length": String(total) }, finished))
      const http = yield* client({ allowPrivateNetworks: true })
      const response = yield* http.request(get(server.url, { maxBodyBytes: 0 }))
      assert.strictEqual(response.status, 200)
      assert.isTrue(response.bodyTruncated)
      const written = yield* Effect.promise(() => finished.promise).pipe(Effect.timeout(5_000))
      assert.isBelow(written, total, "the server should see the connection closed before it wrote everything")
    }))

  it.live("reports a refused connection", () =>
    Effect.gen(function*() {
      const port = yield* closedPort()
      const http = yield* client({ allowPrivateNetworks: true })
      assert.strictEqual(yield* failureReason(http.request(get(`http://127.0.0.1:${port}/`))), "connection_refused")
    }))

  it.live("reports a name that does not resolve as dns_failure", () =>
    Effect.gen(function*() {
      const http = yield* client({ allowPrivateNetworks: false, resolve: notFound })
      const error = yield* Effect.flip(http.request(get("http://no-such-host.example/")))
      assert.strictEqual(error.reason, "dns_failure")
      assert.notInclude(error.message, "nope", "raw error text must not leak")
    }))

  it.live("refuses literal private addresses and localhost before connecting", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("reached"))
      const http = yield* client({ allowPrivateNetworks: false })
      assert.strictEqual(yield* failureReason(http.request(get(server.url))), "address_blocked")
      assert.strictEqual(yield* failureReason(http.request(get(`http://localhost:${server.port}/`))), "address_blocked")
      assert.strictEqual(yield* failureReason(http.request(get(`http://[::ffff:127.0.0.1]:${server.port}/`))), "address_blocked")
      assert.strictEqual(server.connections(), 0)
    }))

  it.live("refuses metadata addresses even when private networks are allowed", () =>
    Effect.gen(function*() {
      const http = yield* client({ allowPrivateNetworks: true, resolve: stub("169.254.169.254") })
      assert.strictEqual(yield* failureReason(http.request(get("http://169.254.169.254/latest/meta-data/"))), "address_blocked")
      assert.strictEqual(yield* failureReason(http.request(get("http://metadata.internal.example/"))), "address_blocked")
    }))

  it.live("re-checks at connect time, so a name rebinding to 127.0.0.1 after validation is refused", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("reached"))
      const url = `http://rebind.example:${server.port}/hook`
      const validated = yield* validateUrl(url, { allowPrivateNetworks: false, requireHttps: false, resolve: stub("93.184.216.34") })
      assert.strictEqual(validated.hostname, "rebind.example")
      const http = yield* client({ allowPrivateNetworks: false, resolve: stub("127.0.0.1") })
      assert.strictEqual(yield* failureReason(http.request(get(validated.href))), "address_blocked")
      assert.strictEqual(server.connections(), 0)
    }))

  it.live("refuses a name whose answer mixes public and private addresses", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("reached"))
      const http = yield* client({ allowPrivateNetworks: false, resolve: stub("93.184.216.34", "127.0.0.1") })
      assert.strictEqual(yield* failureReason(http.request(get(`http://mixed.example:${server.port}/`))), "address_blocked")
      assert.strictEqual(server.connections(), 0)
    }))

  it.live("lets an operator-configured request reach a private address through the guarded lookup", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("reached"))
      const http = yield* client({ allowPrivateNetworks: false, resolve: stub("127.0.0.1") })
      const url = `http://provider.internal.example:${server.port}/api`
      const response = yield* http.request(get(url, { allowPrivateNetworks: true }))
      assert.strictEqual(text(response.body), "reached")
      assert.strictEqual(server.requests[0]?.headers.host, `provider.internal.example:${server.port}`)
      // The same client still refuses the same name for an ordinary request.
      assert.strictEqual(yield* failureReason(http.request(get(url))), "address_blocked")
    }))

  it.live("refuses URLs with user info or another scheme", () =>
    Effect.gen(function*() {
      const http = yield* client({ allowPrivateNetworks: true })
      assert.strictEqual(yield* failureReason(http.request(get("http://user:pw@127.0.0.1:1/"))), "invalid_request")
      assert.strictEqual(yield* failureReason(http.request(get("ftp://127.0.0.1/"))), "invalid_request")
    }))

  it.live("aborts the request when the calling fiber is interrupted", () =>
    Effect.gen(function*() {
      const closed = latch<void>()
      const server = yield* startServer((_req, res) => res.on("close", () => closed.resolve()))
      const http = yield* client({ allowPrivateNetworks: true })
      const exit = yield* http.request(get(server.url, { timeoutMs: 30_000 })).pipe(
        Effect.timeout(300),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      yield* Effect.promise(() => closed.promise).pipe(Effect.timeout(5_000))
    }))
})
