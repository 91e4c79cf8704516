import { Effect, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Connections } from "../../infra/connections/Connections.ts"
import { EventStore, START } from "../../infra/eventlog/EventStore.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type InProcessService, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"

const TOKEN = "xoxb-very-secret-token-4711"
const LIMITS = { SERVICE_RATE_LIMIT_REQUEST_BURST: "1000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "6000" }

interface Store {
  readonly name: string
  readonly start: () => Promise<InProcessService>
  /** Every event's data and the view rows as text, as stored. */
  readonly storedText: (service: InProcessService) => Promise<string>
  readonly stop: () => Promise<void>
  /** Starts the service again on the same stores, where they outlive it. */
  readonly restart?: () => Promise<InProcessService>
}

const memory: Store = {
  name: "memory",
  start: () => startService(LIMITS),
  storedText: (service) =>
    service.runtime.runPromise(Effect.map(Effect.flatMap(EventStore, (store) => store.readAll(START, 10_000)), (events) => JSON.stringify(events.map((e) => e.data)))),
  stop: async () => {}
}

const postgres = (): Store => {
  let url = ""
  const env = () => ({ ...LIMITS, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") })
  const query = (text: string) => runSql<{ text: string }>(url, text)
  return {
    name: "postgres",
    start: async () => {
      url = await createTestDatabase("conn")
      return startService(env())
    },
    restart: () => startService(env()),
    storedText: async () => {
      const events = await query("SELECT data::text AS text FROM events")
      const rows = await query("SELECT row_to_json(v)::text AS text FROM v_connections v")
      return JSON.stringify([...events, ...rows].map((r) => r.text))
    },
    stop: () => dropTestDatabase(url)
  }
}

type Body = Record<string, unknown> | undefined
const code = (body: Body) => (body?.error as { code?: string } | undefined)?.code
const message = (body: Body) => String((body?.error as { message?: string } | undefined)?.message)
const items = (body: Body) => (body?.connections ?? []) as Array<{ connectionId: string; userId: string }>

const suite = (store: Store) =>
  describe(`connections over HTTP (${store.name})`, () => {
    let service: InProcessService
    const bodies: Array<string> = []

    /** Every response body is recorded, so the last test can check none held a credential. */
    const call = async (path: string, init: Parameters<InProcessService["fetch"]>[1] = {}) => {
      const response = await service.fetch(path, init)
      const text = await response.text()
      bodies.push(text)
      return { status: response.status, body: text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>) }
    }
    const create = (json: unknown, init: Parameters<InProcessService["fetch"]>[1] = {}) =>
      call("/v1/connections", { method: "POST", json, ...init })

    beforeAll(async () => {
      service = await store.start()
    })
    afterAll(async () => {
      await service.close()
      await store.stop()
    })

    it("creates, reads, lists and deletes a connection without ever returning credentials", async () => {
      const created = await create({ userId: "alice", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN }, scopes: ["chat:write"], expiresAt: "2099-01-01T00:00:00Z" })
      expect(created.status).toBe(201)
      const connection = created.body!
      expect(connection.connectionId).toMatch(/^conn_[0-9a-z]{32}$/)
      expect(Object.keys(connection).toSorted()).toEqual(["authClass", "connectionId", "createdAt", "expiresAt", "scopes", "toolkit", "userId"])
      expect(connection).toMatchObject({ userId: "alice", toolkit: "slack", authClass: "bearer", scopes: ["chat:write"], expiresAt: "2099-01-01T00:00:00.000Z" })
      const id = String(connection.connectionId)
      expect(await call(`/v1/connections/${id}`)).toEqual({ status: 200, body: connection })
      const listed = await call("/v1/connections?userId=alice")
      expect(listed).toEqual({ status: 200, body: { connections: [connection] } })
      expect((await call(`/v1/connections/${id}`, { method: "DELETE" })).status).toBe(204)
      expect(code((await call(`/v1/connections/${id}`)).body)).toBe("not_found")
      expect(code((await call(`/v1/connections/${id}`, { method: "DELETE" })).body)).toBe("not_found")
    })

    it("the user comes from the body, else the header, else the pinned key", async () => {
      const slack = { toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } }
      expect((await create({ ...slack, userId: "bob" })).body?.userId).toBe("bob")
      expect((await create(slack, { headers: { "x-service-user-id": "carol" } })).body?.userId).toBe("carol")
      expect((await create(slack, { key: PINNED_KEY })).body?.userId).toBe("user_1")
      const unnamed = await create(slack)
      expect(unnamed.status).toBe(422)
      expect(code(unnamed.body)).toBe("invalid_input")
      const other = await create({ ...slack, userId: "bob" }, { key: PINNED_KEY })
      expect(other.status).toBe(403)
      expect(code(other.body)).toBe("auth_insufficient_scope")
      expect((await create({ ...slack, userId: "bad user!" })).status).toBe(422)
    })

    it("pinned keys see and delete only their user's connections; other projects see nothing", async () => {
      const mine = (await create({ toolkit: "github", authClass: "api_key", credentials: { apiKey: TOKEN } }, { key: PINNED_KEY })).body!
      const theirs = (await create({ userId: "dave", toolkit: "github", authClass: "bearer", credentials: { token: TOKEN } })).body!
      const pinnedList = await call("/v1/connections", { key: PINNED_KEY })
      const ids = items(pinnedList.body)
      expect(ids.length).toBeGreaterThan(0)
      expect(ids.every((c) => c.userId === "user_1")).toBe(true)
      expect(ids.map((c) => c.connectionId)).toContain(mine.connectionId)
      expect((await call("/v1/connections?userId=dave", { key: PINNED_KEY })).status).toBe(403)
      expect((await call(`/v1/connections/${String(theirs.connectionId)}`, { key: PINNED_KEY })).status).toBe(404)
      expect((await call(`/v1/connections/${String(theirs.connectionId)}`, { key: PINNED_KEY, method: "DELETE" })).status).toBe(404)
      expect((await call(`/v1/connections/${String(mine.connectionId)}`, { key: PINNED_KEY })).status).toBe(200)
      // Another project: 404 on read and delete, an empty list, and the connection survives.
      expect((await call(`/v1/connections/${String(theirs.connectionId)}`, { key: OTHER_KEY })).status).toBe(404)
      expect((await call(`/v1/connections/${String(theirs.connectionId)}`, { key: OTHER_KEY, method: "DELETE" })).status).toBe(404)
      expect((await call("/v1/connections", { key: OTHER_KEY })).body).toEqual({ connections: [] })
      expect((await call(`/v1/connections/${String(theirs.connectionId)}`)).status).toBe(200)
      // An unpinned key with no user lists the whole project.
      const all = items((await call("/v1/connections")).body)
      expect(new Set(all.map((c) => c.userId))).toEqual(new Set(["user_1", "dave", "bob", "carol"]))
    })

    // Outside audit: an unpinned key acting for bob (X-Service-User-Id) read and deleted alice's
    // connection, while it got 404 for her subscriptions; docs/triggers.md says "as for connections".
    it("an unpinned key naming a user sees and deletes only that user's connections, as for subscriptions", async () => {
      const alices = (await create({ userId: "alice_h", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } })).body!
      const path = `/v1/connections/${String(alices.connectionId)}`
      const asBob = { headers: { "x-service-user-id": "bob_h" } }
      expect((await call(path, asBob)).status).toBe(404)
      expect((await call(path, { ...asBob, method: "DELETE" })).status).toBe(404)
      expect((await call(path, { headers: { "x-service-user-id": "alice_h" } })).body).toEqual(alices)
      expect((await call(path, { headers: { "x-service-user-id": "bad user!" } })).status).toBe(422)
      // Without a user, the project's authority: still there, readable.
      expect((await call(path)).body).toEqual(alices)
      expect((await call(path, { headers: { "x-service-user-id": "alice_h" }, method: "DELETE" })).status).toBe(204)
    })

    it("pages newest first with tamper-evident cursors", async () => {
      for (let i = 0; i < 3; i++) await create({ userId: "paging", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } })
      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const page = await call(`/v1/connections?userId=paging&limit=2${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
        expect(page.status).toBe(200)
        for (const c of items(page.body)) seen.push(c.connectionId)
        cursor = page.body?.nextCursor as string | undefined
      } while (cursor !== undefined)
      expect(seen).toHaveLength(3)
      expect(seen).toEqual(seen.toSorted().toReversed())
      const first = await call("/v1/connections?userId=paging&limit=1")
      const next = String(first.body?.nextCursor)
      expect(code((await call(`/v1/connections?cursor=${encodeURIComponent(next)}`, { key: OTHER_KEY })).body)).toBe("invalid_input")
      // A cursor belongs to its user's list: neither another user's list nor the whole project's
      // takes it (docs/api.md, "Lists and cursors"), nor a pinned key's list of its own user.
      expect(code((await call(`/v1/connections?userId=user_1&cursor=${encodeURIComponent(next)}`)).body)).toBe("invalid_input")
      expect(code((await call(`/v1/connections?cursor=${encodeURIComponent(next)}`)).body)).toBe("invalid_input")
      expect(code((await call(`/v1/connections?cursor=${encodeURIComponent(next)}`, { key: PINNED_KEY })).body)).toBe("invalid_input")
      expect((await call(`/v1/connections?cursor=${encodeURIComponent(`x${next}`)}`)).status).toBe(422)
      expect((await call("/v1/connections?limit=0")).status).toBe(422)
      expect((await call("/v1/connections?limit=101")).status).toBe(422)
      expect((await call("/v1/connections?color=red")).status).toBe(422)
    })

    it("refuses bad input", async () => {
      const good = { userId: "eve", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } }
      const refused = async (json: unknown, status = 422) => {
        const answer = await create(json)
        expect(answer.status, JSON.stringify(json)).toBe(status)
        expect(code(answer.body)).toBe("invalid_input")
        return message(answer.body)
      }
      const malformed = await call("/v1/connections", { method: "POST", body: "{not json", headers: { "content-type": "application/json" } })
      expect(malformed.status).toBe(400)
      await refused({ ...good, extra: 1 })
      await refused({ ...good, toolkit: 7 })
      await refused({ ...good, scopes: "chat:write" })
      // Outside audit: an empty scope was taken and echoed.
      await refused({ ...good, scopes: [""] })
      await refused({ ...good, credentials: { token: 5 } })
      await refused([good])
      expect(await refused({ ...good, toolkit: "nope" })).toContain("Unknown toolkit")
      expect(await refused({ ...good, authClass: "api_key", credentials: { apiKey: TOKEN } })).toContain("accepts auth classes bearer")
      expect(await refused({ ...good, authClass: "magic" })).toContain("body")
      expect(await refused({ ...good, credentials: { apiKey: TOKEN } })).toContain("unknown field")
      expect(await refused({ ...good, credentials: {} })).toContain("token is missing")
      expect(await refused({ ...good, credentials: { token: TOKEN, refreshToken: "r" } })).toContain("unknown field")
      expect(await refused({ ...good, expiresAt: "2001-01-01T00:00:00Z" })).toContain("future")
      expect(await refused({ ...good, expiresAt: "next tuesday" })).toContain("ISO 8601")
      const noKey = await create(good, { key: null })
      expect(noKey.status).toBe(401)
      expect(code(noKey.body)).toBe("auth_missing")
      expect((await create(good, { key: "wrong_key_0000000000" })).status).toBe(401)
      expect((await call("/v1/connections/conn_missing")).status).toBe(404)
      expect(await refused({ ...good, userId: undefined, toolkit: "demo", authClass: "none", credentials: {} })).toContain("Name the user")
      expect((await create({ ...good, toolkit: "demo", authClass: "none", credentials: {} })).status).toBe(201)
    })

    it("credentials never appear in a response body or in the stored events and views", async () => {
      expect(bodies.length).toBeGreaterThan(20)
      for (const body of bodies) expect(body).not.toContain(TOKEN)
      const stored = await store.storedText(service)
      expect(stored).toContain("conn_")
      expect(stored).toContain("v1.")
      expect(stored).not.toContain(TOKEN)
      expect(stored).not.toContain("xoxb")
    })

    it.skipIf(store.restart === undefined)("connections and their sealed credentials survive a restart", async () => {
      const created = (await create({ userId: "frank", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } })).body!
      await service.close()
      service = await store.restart!()
      expect((await call(`/v1/connections/${String(created.connectionId)}`)).body).toEqual(created)
      const resolved = await service.runtime.runPromise(
        Effect.flatMap(Connections, (connections) => connections.resolve({ projectId: "proj_test", userId: "frank", toolkit: "slack", scopes: [] }))
      )
      expect(resolved.connectionId).toBe(created.connectionId)
      expect(resolved.credentials && Redacted.value(resolved.credentials)).toEqual({ token: TOKEN })
    })
  })

suite(memory)
describe.skipIf(!postgresAvailable)("postgres", () => {
  suite(postgres())
})
