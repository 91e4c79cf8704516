/**
 * The sessions store, one suite against memory and against Postgres: create, read, the expiry
 * (an expired row is gone on read and swept in batches), removal, and the GET stream claim.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runMigrations } from "../../infra/eventlog/PgMigrations.ts"
import { layerMemory, type McpSession, McpSessions, newSessionId, isSessionId } from "../../mcp/McpSessions.ts"
import { layerPg, mcpMigrations } from "../../mcp/PgMcpSessions.ts"
import { freshDatabaseLayer, postgresAvailable } from "../support/Database.ts"

const session = (overrides: Partial<McpSession> = {}): McpSession => ({
  sessionId: newSessionId(),
  keyHash: "a".repeat(64),
  projectId: "proj_test",
  pinnedUserId: undefined,
  userId: "user_1",
  protocolVersion: "2025-11-25",
  clientCapabilities: { tasks: {} },
  tasks: true,
  createdMs: Date.now(),
  expiresMs: Date.now() + 60_000,
  streamToken: undefined,
  ...overrides
})

const suite = (name: string, layer: () => Layer.Layer<McpSessions>) =>
  describe(`MCP sessions (${name})`, () => {
    let runtime: ManagedRuntime.ManagedRuntime<McpSessions, never>
    const run = <A>(f: (sessions: McpSessions["Service"]) => Effect.Effect<A, unknown>) => runtime.runPromise(Effect.flatMap(McpSessions, f))
    beforeAll(() => {
      runtime = ManagedRuntime.make(layer())
    })
    afterAll(() => runtime.dispose())

    it("creates and reads a session as it was written", async () => {
      const made = session({ pinnedUserId: "user_1", clientCapabilities: { experimental: { tasks: {} } } })
      await run((s) => s.create(made))
      expect(await run((s) => s.get(made.sessionId))).toEqual(made)
      expect(await run((s) => s.get(newSessionId()))).toBeUndefined()
    })

    it("answers reads made together each with its own session (the same one twice, unknown and expired ones among them)", async () => {
      const live = Array.from({ length: 20 }, (_, i) => session({ userId: `user_${i}` }))
      const expired = session({ expiresMs: Date.now() - 1 })
      for (const made of [...live, expired]) await run((s) => s.create(made))
      const unknown = newSessionId()
      const ids = [...live.map((made) => made.sessionId), unknown, expired.sessionId, live[3]!.sessionId]
      const read = await run((s) => Effect.forEach(ids, (id) => s.get(id), { concurrency: "unbounded" }))
      expect(read).toEqual([...live, undefined, undefined, live[3]])
    })

    it("forgets an expired session on read and sweeps expired ones in batches", async () => {
      const expired = session({ expiresMs: Date.now() - 1 })
      await run((s) => s.create(expired))
      expect(await run((s) => s.get(expired.sessionId))).toBeUndefined()
      const many = Array.from({ length: 5 }, () => session({ expiresMs: Date.now() - 1 }))
      for (const made of many) await run((s) => s.create(made))
      expect(await run((s) => s.sweep(3))).toBe(3)
      expect(await run((s) => s.sweep(10))).toBe(2)
    })

    it("removes a session once and records its newest stream", async () => {
      const made = session()
      await run((s) => s.create(made))
      await run((s) => s.claimStream(made.sessionId, "stream-2"))
      expect((await run((s) => s.get(made.sessionId)))?.streamToken).toBe("stream-2")
      expect(await run((s) => s.remove(made.sessionId))).toBe(true)
      expect(await run((s) => s.remove(made.sessionId))).toBe(false)
      expect(await run((s) => s.get(made.sessionId))).toBeUndefined()
    })

    it("makes unguessable ids of one shape", () => {
      const ids = new Set(Array.from({ length: 100 }, newSessionId))
      expect(ids.size).toBe(100)
      for (const id of ids) expect(isSessionId(id)).toBe(true)
      expect(isSessionId("mcps_../../etc")).toBe(false)
    })
  })

suite("memory", () => layerMemory)

if (postgresAvailable) {
  // The table migrated first, on a database of the suite's own.
  suite("postgres", () =>
    layerPg.pipe(
      Layer.provide(Layer.effectDiscard(runMigrations(mcpMigrations)).pipe(Layer.provideMerge(freshDatabaseLayer()))),
      Layer.orDie
    ))
}
