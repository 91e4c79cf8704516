import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { LookupAddress } from "node:dns"
import * as net from "node:net"
import {
  blockedHost,
  isLocalhostName,
  makeGuardedLookup,
  type Resolver,
  validateUrl
} from "../../../infra/outbound/AddressGuard.ts"
import { startServer } from "../support/LocalServer.ts"

const stub = (...addresses: ReadonlyArray<string>): Resolver & { calls: number } => {
  const resolver = Object.assign(async () => {
    resolver.calls += 1
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }))
  }, { calls: 0 })
  return resolver
}

const unresolvable: Resolver = () => Promise.reject(Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" }))
const never: Resolver = () => new Promise(() => {})

const strict = { allowPrivateNetworks: false, requireHttps: true, resolve: stub("93.184.216.34") }

const refusal = (url: string, options = strict) =>
  Effect.flip(validateUrl(url, options)).pipe(Effect.map((error) => error.message))

describe("validateUrl", () => {
  it.effect("normalizes an acceptable URL", () =>
    Effect.gen(function*() {
      const url = yield* validateUrl("HTTPS://Hooks.Example.COM:443/Hook/Path?x=1#frag", strict)
      assert.strictEqual(url.href, "https://hooks.example.com/Hook/Path?x=1")
    }))

  it.effect("normalizes the decisions.md example when private networks are allowed", () =>
    Effect.gen(function*() {
      const url = yield* validateUrl("HTTPS://LocalHost:443/Hook/Path", { ...strict, allowPrivateNetworks: true, resolve: stub("127.0.0.1") })
      assert.strictEqual(url.href, "https://localhost/Hook/Path")
    }))

  it.effect("refuses malformed URLs, other schemes, plain http when https is required, and user info", () =>
    Effect.gen(function*() {
      assert.include(yield* refusal("not a url"), "absolute URL")
      assert.include(yield* refusal("ftp://example.com/"), "https")
      assert.include(yield* refusal("http://example.com/"), "https")
      assert.include(yield* refusal("https://user:secret@example.com/"), "user info")
      const plain = yield* validateUrl("http://example.com/", { ...strict, requireHttps: false })
      assert.strictEqual(plain.protocol, "http:")
      assert.include(yield* refusal("ftp://example.com/", { ...strict, requireHttps: false }), "http or https")
    }))

  // The URL parser drops tabs and line breaks anywhere and control characters at either end, and
  // takes port 0: a URL that says something else than what would be stored is refused. A space
  // it encodes, which keeps what was written.
  it.effect("refuses control characters and port 0 rather than storing a URL the client did not write", () =>
    Effect.gen(function*() {
      for (const raw of ["https://example.com/x\r\nX: y", "https://exa\tmple.com/", "\u0001https://example.com/", "https://example.com/\u0000", "https://example.com/\u007f"]) {
        assert.include(yield* refusal(raw), "control characters", JSON.stringify(raw))
      }
      assert.include(yield* refusal("https://example.com:0/x"), "port 0")
      assert.include(yield* refusal("https://10.0.0.1:0/x", { ...strict, allowPrivateNetworks: true }), "port 0")
      const spaced = yield* validateUrl("https://example.com/a b", strict)
      assert.strictEqual(spaced.href, "https://example.com/a%20b")
    }))

  it.effect("refuses literal non-public addresses in every spelling the URL parser accepts", () =>
    Effect.gen(function*() {
      for (const url of [
        "https://127.0.0.1/",
        "https://0x7f.1/",
        "https://2130706433/",
        "https://017700000001/",
        "https://[::1]/",
        "https://[::ffff:7f00:1]/",
        "https://10.1.2.3/",
        "https://169.254.169.254/",
        "https://[fd00:ec2::254]/",
        "https://0.0.0.0/",
        "https://[fe80::1]/"
      ]) {
        assert.include(yield* refusal(url), "not allowed", url)
      }
      const publicLiteral = yield* validateUrl("https://93.184.216.34/x", strict)
      assert.strictEqual(publicLiteral.hostname, "93.184.216.34")
    }))

  it.effect("refuses localhost names without asking DNS", () =>
    Effect.gen(function*() {
      const resolver = stub("93.184.216.34")
      for (const url of ["https://localhost/", "https://LOCALHOST./", "https://api.localhost/", "https://a.b.localhost:8443/"]) {
        assert.include(yield* refusal(url, { ...strict, resolve: resolver }), "localhost", url)
      }
      assert.strictEqual(resolver.calls, 0)
    }))

  it.effect("resolves names and refuses them when any address is not public", () =>
    Effect.gen(function*() {
      assert.include(yield* refusal("https://intranet.example/", { ...strict, resolve: stub("10.0.0.5") }), "private network")
      assert.include(yield* refusal("https://mixed.example/", { ...strict, resolve: stub("93.184.216.34", "127.0.0.1") }), "loopback")
      assert.include(yield* refusal("https://v6.example/", { ...strict, resolve: stub("2606:4700::1", "fd00::1") }), "private network")
      assert.include(yield* refusal("https://meta.example/", { ...strict, resolve: stub("169.254.169.254") }), "metadata")
      yield* validateUrl("https://ok.example/", { ...strict, resolve: stub("93.184.216.34", "2606:4700::1") })
    }))

  it.effect("allows private networks when configured, but never metadata addresses", () =>
    Effect.gen(function*() {
      const open = { ...strict, allowPrivateNetworks: true }
      yield* validateUrl("https://10.0.0.5/", open)
      yield* validateUrl("https://intranet.example/", { ...open, resolve: stub("192.168.1.10") })
      assert.include(yield* refusal("https://169.254.169.254/", open), "metadata")
      assert.include(yield* refusal("https://meta.example/", { ...open, resolve: stub("fd00:ec2::254") }), "metadata")
    }))

  it.effect("accepts a name that does not resolve: the connect-time guard decides later", () =>
    Effect.gen(function*() {
      const url = yield* validateUrl("https://not-yet.example/", { ...strict, resolve: unresolvable })
      assert.strictEqual(url.hostname, "not-yet.example")
    }))

  it.live("accepts a name whose resolution outlasts resolveTimeoutMs", () =>
    Effect.gen(function*() {
      const url = yield* validateUrl("https://slow.example/", { ...strict, resolve: never, resolveTimeoutMs: 50 })
      assert.strictEqual(url.hostname, "slow.example")
    }))
})

describe("blockedHost and isLocalhostName", () => {
  it("classifies without DNS", () => {
    const policy = { allowPrivateNetworks: false }
    assert.strictEqual(blockedHost("[::1]", policy), "loopback")
    assert.strictEqual(blockedHost("localhost", policy), "localhost")
    assert.isUndefined(blockedHost("example.com", policy))
    assert.isUndefined(blockedHost("8.8.8.8", policy))
    assert.isUndefined(blockedHost("localhost", { allowPrivateNetworks: true }))
    assert.strictEqual(blockedHost("169.254.169.254", { allowPrivateNetworks: true }), "metadata")
    assert.isTrue(isLocalhostName("Foo.LocalHost."))
    assert.isFalse(isLocalhostName("localhost.example.com"))
    assert.isFalse(isLocalhostName("notlocalhost"))
  })
})

type LookupResult = { readonly error: NodeJS.ErrnoException | null; readonly address: string | ReadonlyArray<LookupAddress> }

const lookupWith = (lookup: net.LookupFunction, host: string, all: boolean) =>
  Effect.callback<LookupResult>((resume) => {
    lookup(host, { all }, (error, address) => resume(Effect.succeed({ error, address })))
  })

describe("makeGuardedLookup", () => {
  it.effect("answers in the single and the all form", () =>
    Effect.gen(function*() {
      const lookup = makeGuardedLookup({ allowPrivateNetworks: false }, stub("93.184.216.34", "2606:4700::1"))
      const one = yield* lookupWith(lookup, "public.example", false)
      assert.isNull(one.error)
      assert.strictEqual(one.address, "93.184.216.34")
      const all = yield* lookupWith(lookup, "public.example", true)
      assert.deepStrictEqual(all.address, [{ address: "93.184.216.34", family: 4 }, { address: "2606:4700::1", family: 6 }])
    }))

  it.effect("fails with ERR_ADDRESS_BLOCKED for refused answers and localhost names", () =>
    Effect.gen(function*() {
      const resolver = stub("127.0.0.1")
      const lookup = makeGuardedLookup({ allowPrivateNetworks: false }, resolver)
      assert.strictEqual((yield* lookupWith(lookup, "rebound.example", true)).error?.code, "ERR_ADDRESS_BLOCKED")
      assert.strictEqual((yield* lookupWith(lookup, "localhost", false)).error?.code, "ERR_ADDRESS_BLOCKED")
      assert.strictEqual(resolver.calls, 1)
      const failing = makeGuardedLookup({ allowPrivateNetworks: false }, unresolvable)
      assert.strictEqual((yield* lookupWith(failing, "gone.example", true)).error?.code, "ENOTFOUND")
    }))

  it.live("plugs into net.connect: connects when allowed, refuses before any socket connects otherwise", () =>
    Effect.gen(function*() {
      const server = yield* startServer((_req, res) => res.end("ok"))
      const connect = (allowPrivateNetworks: boolean) =>
        Effect.callback<string>((resume) => {
          const socket = net.connect({
            host: "provider.example",
            port: server.port,
            lookup: makeGuardedLookup({ allowPrivateNetworks }, stub("127.0.0.1"))
          })
          socket.once("connect", () => {
            socket.destroy()
            resume(Effect.succeed("connected"))
          })
          socket.once("error", (error: NodeJS.ErrnoException) => resume(Effect.succeed(error.code ?? "error")))
        })
      assert.strictEqual(yield* connect(false), "ERR_ADDRESS_BLOCKED")
      assert.strictEqual(server.connections(), 0)
      assert.strictEqual(yield* connect(true), "connected")
    }))
})
