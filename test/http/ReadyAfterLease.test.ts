/**
 * `/readyz` after an outage longer than the runner lease (outside audit): Postgres came back,
 * `/readyz` answered 200, and yet every execute was answered 503 for another 1.3 to 2.5 s,
 * while the process registered a new incarnation (its old lease had lapsed, so it may not run
 * executions until it holds a new one). /readyz is "200 when this process should get traffic"
 * (docs/operations.md): it now also says whether the process holds a runner lease.
 *
 * Here, the lease is 1 s and the test's own Postgres is stopped for 3 s. Afterwards readiness
 * and execute are asked in turn every 25 ms: once /readyz says 200, an execute asked right after
 * must not be 503.
 */
import { Agent } from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { call, type Outcome } from "../support/Calls.ts"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { eventually, makeCertificate } from "../support/WebhookReceiver.ts"
import { keyOf, serviceEnv } from "../support/Webhooks.ts"

describe.skipIf(!ownPostgresAvailable)("/readyz after an outage longer than the runner lease", () => {
  let postgres: OwnPostgres | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    if (service !== undefined && service.process.exitCode === null) await service.kill9()
    await postgres?.destroy()
  })

  it("says ready only once the process holds a runner lease again: no execute is refused for want of one after a 200", async () => {
    postgres = await startOwnPostgres()
    const port = await freePort()
    service = await startProcess(serviceEnv(postgres.url, makeCertificate(), {
      SERVICE_LEASE_TTL_MS: "1000",
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000"
    }), port)
    const agent = new Agent({ keepAlive: true, maxSockets: 4 })
    const execute = () => call(agent, port, "POST", "/v1/execute", keyOf("p1"), { tool: "demo.echo", userId: "u1", input: {} })
    expect((await execute()).status).toBe(200)

    await postgres.stop()
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    await postgres.start()

    const pairs: Array<{ readonly ready: Outcome; readonly executed: Outcome }> = []
    await eventually(async () => {
      const ready = await call(agent, port, "GET", "/readyz", undefined)
      const executed = await execute()
      pairs.push({ ready, executed })
      await new Promise((resolve) => setTimeout(resolve, 25))
      // Done once both have been fine for a while.
      return pairs.slice(-20).length === 20 && pairs.slice(-20).every((pair) => pair.ready.status === 200 && pair.executed.status === 200)
        ? true
        : undefined
    }, 60_000, "ready and executing again")
    agent.destroy()

    // Before the fix the first pairs after the restart were 200/503 for 1.3-2.5 s.
    const refusedWhileReady = pairs.filter((pair) => pair.ready.status === 200 && pair.executed.status === 503)
    expect(refusedWhileReady.map((pair) => [pair.ready.body, pair.executed.body])).toEqual([])
  })
})
