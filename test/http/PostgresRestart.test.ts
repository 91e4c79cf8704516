/**
 * Postgres goes away under load and comes back (decisions.md section 9): a server of the test's
 * own (test/support/OwnPostgres.ts) is stopped for three seconds while executions and
 * deliveries flow through a real service process. Meanwhile the service answers 503 with a
 * retryable envelope, and `/readyz` says the store is failing; it reconnects by itself, and
 * every execution it accepted (answered 200 or 202) is recorded, finished and delivered.
 */
import { Agent } from "node:http"
import { call, type Outcome } from "../support/Calls.ts"
import { describe, expect, it } from "vitest"
import { logLines } from "../support/Service.ts"
import { ownPostgresAvailable } from "../support/OwnPostgres.ts"
import { useOwnPostgresService } from "../support/OwnPostgresService.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { createEndpoint, keyOf } from "../support/Webhooks.ts"

describe.skipIf(!ownPostgresAvailable)("Postgres restarting under load (its own server, a real service process)", () => {
  const start = useOwnPostgresService()

  it("answers 503 (retryable) while it is away, /readyz tells the truth, reconnects, loses nothing it accepted", async () => {
    const { postgres, receiver, service, port } = await start({
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000"
    })
    const projects = ["p1", "p2", "p3", "p4", "p5", "p6"]
    for (const project of projects) await createEndpoint(service, project, receiver.url(`/hook/${project}`))

    const agent = new Agent({ keepAlive: true, maxSockets: 16 })
    const outcomes: Array<Outcome> = []
    const probes: Array<Outcome & { readonly store?: string | undefined }> = []
    const traffic = { running: true }
    const worker = async (n: number) => {
      const project = projects[n % projects.length]!
      for (let i = 0; traffic.running; i++) {
        // Sync runs, and async ones that finish after their 202.
        const body = i % 5 === 0
          ? { tool: "demo.sleep", userId: `u${n}`, input: { ms: 50 }, mode: "async" }
          : { tool: "demo.echo", userId: `u${n}`, input: { n, i } }
        outcomes.push(await call(agent, port, "POST", "/v1/execute", keyOf(project), body))
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    }
    const prober = async () => {
      while (traffic.running) {
        const probe = await call(agent, port, "GET", "/readyz", undefined)
        const store = probe.body === undefined ? undefined : (JSON.parse(probe.body) as { checks: { store: { status: string } } }).checks.store.status
        probes.push({ ...probe, store })
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    const load = [...Array.from({ length: 12 }, (_, n) => worker(n)), prober()]

    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const stopping = Date.now()
    await postgres.stop()
    const down = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    const starting = Date.now()
    await postgres.start()
    const up = Date.now()
    // Back: the service reconnects by itself and serves again.
    await eventually(() => outcomes.some((o) => o.at > up && o.status === 200), 30_000, "a successful execution after the restart")
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    traffic.running = false
    await Promise.all(load)
    agent.destroy()

    // No request was cut: every one was answered.
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([])
    // Accepted, unavailable, or (async runs waiting out the outage hold demo's concurrency cap) 429.
    expect(outcomes.filter((o) => ![200, 202, 429, 503].includes(o.status ?? 0)).map((o) => o.body)).toEqual([])
    const unavailable = outcomes.filter((o) => o.status === 503)
    expect(unavailable.length).toBeGreaterThan(0)
    for (const answer of unavailable) {
      const body = JSON.parse(answer.body ?? "{}") as { error: { code: string; retryable: boolean }; requestId: string }
      expect(body.error).toMatchObject({ code: "provider_unavailable", retryable: true })
      expect(body.requestId).toMatch(/^req_/)
      expect(answer.retryAfter).toBe("1")
    }
    // While the server was down, readiness said so; before and after, it was ready.
    const whileDown = probes.filter((p) => p.at > down + 200 && p.at < starting)
    expect(whileDown.length).toBeGreaterThan(5)
    expect(whileDown.filter((p) => p.status !== 503 || p.store !== "failing")).toEqual([])
    expect(probes.filter((p) => p.at < stopping).every((p) => p.status === 200)).toBe(true)
    await eventually(async () => (await call(new Agent(), port, "GET", "/readyz", undefined)).status === 200, 15_000, "ready again")

    // Every accepted execution is recorded and finishes; each one's event reaches the receiver.
    const accepted = outcomes.filter((o) => o.status === 200 || o.status === 202).map((o) => {
      const body = JSON.parse(o.body ?? "{}") as { executionId: string; projectId: string }
      return { executionId: body.executionId, project: body.projectId.replace(/^proj_/, "") }
    })
    expect(accepted.length).toBeGreaterThan(100)
    const client = service
    await eventually(async () => {
      for (const { executionId, project } of accepted) {
        const record = await client.fetch(`/v1/executions/${executionId}`, { key: keyOf(project) })
        if (record.status !== 200) throw new Error(`accepted execution ${executionId} answered ${record.status}`)
        const status = ((await record.json()) as { status: string }).status
        if (status !== "succeeded") return undefined
      }
      return true
    }, 60_000, "every accepted execution to succeed")
    const delivered = () => new Set(receiver.received.map((r) => (JSON.parse(r.rawBody) as { data: { executionId: string } }).data.executionId))
    await eventually(() => accepted.every(({ executionId }) => delivered().has(executionId)), 60_000, "a delivery for every accepted execution")

    // The operator's view of the outage: when the database stopped answering, and when it came back.
    const lines = logLines(service)
    expect(lines.filter((line) => /"level":"warn","message":"runner lease: the database did not answer a renewal; retrying every \d+ ms"/.test(line))).toHaveLength(1)
    expect(lines.filter((line) => /"level":"info","message":"runner lease: the database answers again after \d+\.\d s; the lease was kept"/.test(line))).toHaveLength(1)
    // An outage is expected: warnings, and no line at error (what an operator's alerts page on).
    expect(lines.filter((line) => line.includes(`"level":"error"`))).toEqual([])
  }, 180_000)
})
