/**
 * Several processes on one Postgres: each owns the executions it dispatches. A process that
 * starts (or scans) never touches a live peer's executions; when a peer is killed with -9, the
 * survivors fail its running executions as interrupted and run its pending ones.
 */
import { describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { cleanupAfterAll, startPeers, startProcess } from "../support/Service.ts"
import { execute, type Json, ROOMY, SECRET_KEY, terminal, waitFor } from "./support/Executions.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!postgresAvailable)("execution ownership across processes", () => {
  const cleanup = cleanupAfterAll()

  it("a restarting peer leaves live executions alone; a killed owner's executions are taken over", async () => {
    const url = await createTestDatabase("own")
    cleanup.push(() => dropTestDatabase(url))
    const env = { ...ROOMY, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }
    const [a, b] = await startPeers(env)
    cleanup.push(() => a.stop(), () => b.stop())

    // A runs four long executions (demo's cap of 4 is full) and queues two more.
    const running: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const { body } = await execute(a, { tool: "demo.sleep", input: { ms: 600_000 }, userId: "u_own", mode: "async" })
      running.push(String(body.executionId))
    }
    for (const id of running) expect((await waitFor(a, id, (r) => r.status === "running")).status).toBe("running")
    const pending: Array<string> = []
    for (let i = 0; i < 2; i++) {
      const { body } = await execute(a, { tool: "demo.sleep", input: { ms: 50 }, userId: "u_own", mode: "async" })
      pending.push(String(body.executionId))
    }

    // B is killed and comes back: its start-up recovery and its scans see A alive.
    await b.kill9()
    const again = await startProcess(env, await freePort())
    cleanup.push(() => again.stop())
    await sleep(6_000)
    for (const id of running) expect((await waitFor(again, id, () => true)).status).toBe("running")
    for (const id of pending) expect((await waitFor(again, id, () => true)).status).toBe("pending")

    // A dies: the survivor interrupts what A had dispatched and runs what A had queued.
    await a.kill9()
    for (const id of running) {
      const record: Json = await waitFor(again, id, terminal, 20_000)
      expect(record).toMatchObject({ status: "failed", error: { code: "execution_interrupted" } })
    }
    for (const id of pending) {
      expect(await waitFor(again, id, terminal, 20_000)).toMatchObject({ status: "succeeded", output: { sleptMs: 50 } })
    }
    expect(again.output()).toContain("recovered executions no process was running: 4 interrupted, 2 resumed")
  }, 90_000)
})
