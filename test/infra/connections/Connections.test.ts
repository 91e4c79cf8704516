import { assert, describe, it as test, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { credentialProblem, missingScopes, parseExpiry } from "../../../domain/Connection.ts"
import { Connections, type CreateConnectionInput } from "../../../infra/connections/Connections.ts"
import { EventStore, START } from "../../../infra/eventlog/EventStore.ts"
import { FeaturesLive } from "../../../src/App.ts"
import { configLayer } from "../../support/Config.ts"

const TestLayer = FeaturesLive.pipe(Layer.provide(configLayer({ SERVICE_API_KEYS: "" })))

const slack = (userId: string, extra: Partial<CreateConnectionInput> = {}): CreateConnectionInput => ({
  projectId: "proj_a",
  userId,
  toolkit: "slack",
  authClass: "bearer",
  credentials: { token: `xoxb-secret-${userId}` },
  scopes: [],
  ...extra
})

const failure = <A, E>(effect: Effect.Effect<A, E, Connections>) =>
  Effect.map(Effect.flip(effect), (error) => ({ tag: (error as { _tag: string })._tag, message: (error as { message: string }).message }))

describe("domain rules", () => {
  test("credential shapes per auth class", () => {
    assert.isUndefined(credentialProblem("bearer", { token: "t" }))
    assert.isUndefined(credentialProblem("api_key", { apiKey: "k" }))
    assert.isUndefined(credentialProblem("oauth2", { accessToken: "a" }))
    assert.isUndefined(credentialProblem("oauth2", { accessToken: "a", refreshToken: "r" }))
    assert.isUndefined(credentialProblem("none", {}))
    assert.include(credentialProblem("bearer", { apiKey: "k" }) ?? "", "unknown field")
    assert.include(credentialProblem("bearer", {}) ?? "", "token is missing")
    assert.include(credentialProblem("bearer", { token: " " }) ?? "", "token is empty")
    assert.include(credentialProblem("oauth2", { refreshToken: "r" }) ?? "", "accessToken is missing")
    assert.include(credentialProblem("none", { token: "t" }) ?? "", "unknown field")
    assert.include(credentialProblem("api_key", { apiKey: "k", token: "t" }) ?? "", "unknown field")
  })

  test("expiry must be a zoned ISO 8601 date-time in the future", () => {
    assert.deepStrictEqual(parseExpiry("2030-01-01T01:00:00+01:00", 0), { ok: true, expiresAt: "2030-01-01T00:00:00.000Z" })
    assert.isFalse(parseExpiry("2030-01-01", 0).ok)
    assert.isFalse(parseExpiry("2030-01-01T00:00:00", 0).ok)
    assert.isFalse(parseExpiry("tomorrow", 0).ok)
    assert.isFalse(parseExpiry("2030-13-45T00:00:00Z", 0).ok)
    assert.isFalse(parseExpiry("2030-02-30T00:00:00Z", 0).ok)
    assert.isFalse(parseExpiry("2030-01-01T24:00:00Z", 0).ok)
    assert.isFalse(parseExpiry("2030-01-01T00:00:00+23:60", 0).ok)
    assert.isFalse(parseExpiry("1970-01-01T00:00:00.000Z", 0).ok)
  })

  test("a connection listing no scopes grants every scope", () => {
    assert.deepStrictEqual(missingScopes([], ["a"]), [])
    assert.deepStrictEqual(missingScopes(["a"], ["a", "b"]), ["b"])
  })
})

layer(TestLayer)("Connections.resolve", (it) => {
  it.effect("a toolkit needing no connection resolves to nothing", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      assert.deepStrictEqual(yield* connections.resolve({ projectId: "proj_a", userId: "nobody", toolkit: "demo", scopes: [] }), {})
      // A named one is still checked, and passed on without credentials.
      const wrong = yield* failure(connections.resolve({ projectId: "proj_a", userId: "nobody", toolkit: "demo", connectionId: "conn_x", scopes: [] }))
      assert.include(wrong.message, "does not exist")
      const demo = yield* connections.create({ ...slack("demo_user"), toolkit: "demo", authClass: "none", credentials: {} })
      const named = yield* connections.resolve({ projectId: "proj_a", userId: "demo_user", toolkit: "demo", connectionId: demo.connectionId, scopes: [] })
      assert.deepStrictEqual(named, { connectionId: demo.connectionId })
    }))

  it.effect("the user's single connection for the toolkit, with its credentials opened", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      const created = yield* connections.create(slack("single"))
      const resolved = yield* connections.resolve({ projectId: "proj_a", userId: "single", toolkit: "slack", scopes: ["chat:write"] })
      assert.strictEqual(resolved.connectionId, created.connectionId)
      assert.deepStrictEqual(resolved.credentials && Redacted.value(resolved.credentials), { token: "xoxb-secret-single" })
      assert.notInclude(String(resolved.credentials), "xoxb")
      // The log holds the sealed form only.
      const events = yield* Effect.flatMap(EventStore, (store) => store.readAll(START, 1000))
      assert.isAbove(events.length, 0)
      assert.notInclude(JSON.stringify(events.map((e) => e.data)), "xoxb-secret")
    }))

  it.effect("none, or several without a connectionId, is 422 saying so", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      const none = yield* failure(connections.resolve({ projectId: "proj_a", userId: "nobody", toolkit: "slack", scopes: [] }))
      assert.deepStrictEqual(none.tag, "InvalidInput")
      assert.include(none.message, "no connection")
      const first = yield* connections.create(slack("several"))
      yield* connections.create(slack("several"))
      const several = yield* failure(connections.resolve({ projectId: "proj_a", userId: "several", toolkit: "slack", scopes: [] }))
      assert.include(several.message, "several connections")
      const named = yield* connections.resolve({
        projectId: "proj_a",
        userId: "several",
        toolkit: "slack",
        connectionId: first.connectionId,
        scopes: []
      })
      assert.strictEqual(named.connectionId, first.connectionId)
    }))

  it.effect("a named connection must belong to the project, the user and the toolkit", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      const mine = yield* connections.create(slack("owner"))
      const github = yield* connections.create({ ...slack("owner"), toolkit: "github", credentials: { token: "ghp_x" } })
      const base = { projectId: "proj_a", userId: "owner", toolkit: "slack", scopes: [] }
      assert.include((yield* failure(connections.resolve({ ...base, userId: "intruder", connectionId: mine.connectionId }))).message, "does not exist")
      assert.include((yield* failure(connections.resolve({ ...base, projectId: "proj_b", connectionId: mine.connectionId }))).message, "does not exist")
      assert.include((yield* failure(connections.resolve({ ...base, connectionId: github.connectionId }))).message, "is for toolkit github")
      assert.include((yield* failure(connections.resolve({ ...base, connectionId: "conn_missing" }))).message, "does not exist")
    }))

  it.effect("an expired connection is 422 connection expired", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      // The test clock starts at the epoch: one minute later is in the future until it is adjusted.
      yield* connections.create(slack("expiring", { expiresAt: "1970-01-01T00:01:00.000Z" }))
      const request = { projectId: "proj_a", userId: "expiring", toolkit: "slack", scopes: [] }
      assert.isDefined((yield* connections.resolve(request)).credentials)
      yield* TestClock.adjust("2 minutes")
      const expired = yield* failure(connections.resolve(request))
      assert.deepStrictEqual(expired, { tag: "InvalidInput", message: "connection expired" })
    }))

  it.effect("missing scopes are 422 when the connection lists scopes", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      yield* connections.create(slack("scoped", { scopes: ["channels:read"] }))
      const request = { projectId: "proj_a", userId: "scoped", toolkit: "slack" }
      const missing = yield* failure(connections.resolve({ ...request, scopes: ["chat:write"] }))
      assert.include(missing.message, "lacks the scopes chat:write")
      assert.isDefined((yield* connections.resolve({ ...request, scopes: ["channels:read"] })).credentials)
    }))

  it.effect("a deleted connection no longer resolves", () =>
    Effect.gen(function*() {
      const connections = yield* Connections
      const created = yield* connections.create(slack("deleting"))
      yield* connections.delete("proj_a", created.connectionId)
      const gone = yield* failure(connections.resolve({ projectId: "proj_a", userId: "deleting", toolkit: "slack", scopes: [] }))
      assert.include(gone.message, "no connection")
      const again = yield* failure(connections.delete("proj_a", created.connectionId))
      assert.strictEqual(again.tag, "NotFound")
    }))
})
