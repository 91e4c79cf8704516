/**
 * Restart recovery on Postgres with a real process killed by SIGKILL: executions whose dispatch
 * had not begun run after the restart; those whose dispatch may have begun fail with
 * `execution_interrupted`; idempotency keys survive.
 */
import { describe, expect, it } from "vitest"
import { freePort } from "../support/Ports.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type ChildService, cleanupAfterAll, PINNED_KEY, startProcess, startService } from "../support/Service.ts"
import { execute, type Json, post, ROOMY, SECRET_KEY, terminal, waitFor } from "./support/Executions.ts"


describe.skipIf(!postgresAvailable)("execution recovery after kill -9", () => {
  const cleanup = cleanupAfterAll()

  it("runs never-dispatched executions and fails possibly-dispatched ones as interrupted", async () => {
    const url = await createTestDatabase("rst")
    cleanup.push(() => dropTestDatabase(url))
    const env = { ...ROOMY, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }
    const first: ChildService = await startProcess(env, await freePort())
    cleanup.push(() => first.stop())

    const running: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const { status, body } = await execute(first, { tool: "demo.sleep", input: { ms: 600_000 }, userId: "u_rst", mode: "async" })
      expect(status).toBe(202)
      running.push(String(body.executionId))
    }
    for (const id of running) expect((await waitFor(first, id, (r) => r.status === "running")).status).toBe("running")
    const pending: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const { body } = await execute(first, { tool: "demo.sleep", input: { ms: 100 }, userId: "u_rst", mode: "async", idempotencyKey: `p${i}` })
      pending.push(String(body.executionId))
    }
    for (const id of pending) expect((await waitFor(first, id, () => false, 100)).status).toBe("pending")

    await first.kill9()
    const second = await startProcess(env, await freePort())
    cleanup.push(() => second.stop())

    for (const id of running) {
      const record: Json = await waitFor(second, id, terminal)
      expect(record).toMatchObject({ status: "failed", error: { code: "execution_interrupted", retryable: true } })
      expect(record.startedAt).toBeTypeOf("string")
    }
    for (const id of pending) {
      const record = await waitFor(second, id, terminal)
      expect(record).toMatchObject({ status: "succeeded", output: { sleptMs: 100 } })
    }
    // The idempotency claims survived the crash.
    const replay = await execute(second, { tool: "demo.sleep", input: { ms: 100 }, userId: "u_rst", mode: "async", idempotencyKey: "p0" })
    expect(replay.body).toMatchObject({ executionId: pending[0], replayed: true })
    // The interrupted executions' permits were reclaimed: the cap is free again.
    expect((await execute(second, { tool: "demo.echo", userId: "u_rst" })).status).toBe(200)
  }, 60_000)
})

describe.skipIf(!postgresAvailable)("concurrency caps across processes", () => {
  it("permits held by one process count in another on the same database", async () => {
    const url = await createTestDatabase("cap")
    const env = { ...ROOMY, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }
    const a = await startService(env)
    const b = await startService(env)
    try {
      const running: Array<string> = []
      for (let i = 0; i < 4; i++) {
        const { body } = await execute(a, { tool: "demo.sleep", input: { ms: 60_000 }, mode: "async" }, { key: PINNED_KEY })
        running.push(String(body.executionId))
      }
      for (const id of running) await waitFor(a, id, (r) => r.status === "running")
      const refused = await execute(b, { tool: "demo.echo" }, { key: PINNED_KEY })
      expect(refused.status).toBe(429)
      // Queued in b, it runs once a permit held by a is freed (b polls for foreign releases).
      const queued = await execute(b, { tool: "demo.sleep", input: { ms: 1 }, mode: "async" }, { key: PINNED_KEY })
      await post(a, `/v1/executions/${running[0]}/cancel`)
      expect((await waitFor(b, String(queued.body.executionId), terminal)).status).toBe("succeeded")
      for (const id of running.slice(1)) await post(a, `/v1/executions/${id}/cancel`)
      expect((await execute(b, { tool: "demo.echo" }, { key: PINNED_KEY })).status).toBe(200)
    } finally {
      await a.close()
      await b.close()
      await dropTestDatabase(url)
    }
  })
})
