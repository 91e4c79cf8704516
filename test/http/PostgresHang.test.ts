/**
 * Postgres hangs instead of going away (an operator audit): a server of the test's own
 * (test/support/OwnPostgres.ts) is frozen with SIGSTOP for ten seconds, twice the store's bound
 * (SERVICE_STORE_TIMEOUT_MS, 5 s by default), while executions and deliveries flow through a
 * real service process. A frozen server refuses nothing: connections open and statements are
 * sent, and nothing answers.
 *
 * Meanwhile a request that needs the store is answered 503 (retryable, `Retry-After`) within the
 * bound, `/readyz` answers 503 within its own 2 s, `/healthz` and `/metrics` answer. After
 * SIGCONT the service serves again by itself, and every execution it accepted (before, during
 * or after) finishes and is delivered. Before the bound, requests waited for the thaw and
 * `/readyz` took 7 s.
 *
 * A second case freezes it past the runner lease (SERVICE_LEASE_TTL_MS of 5 s): the process then
 * stops its actors on purpose (operations.md), so an execution running then ends
 * `execution_interrupted`; requests are still answered within the bound (none is held waiting for
 * the lease to come back), and every accepted execution still ends and is delivered.
 *
 * Margins are generous (the bound + 3 s): this asserts that answers come, not how fast.
 */
import { Agent } from "node:http"
import { call, type Outcome } from "../support/Calls.ts"
import { afterAll, describe, expect, it } from "vitest"
import { freePort } from "../support/Ports.ts"
import { type ChildService, logLines, startProcess } from "../support/Service.ts"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, keyOf, serviceEnv } from "../support/Webhooks.ts"

/** The default of SERVICE_STORE_TIMEOUT_MS, which the service here runs with. */
const BOUND_MS = 5_000
/** What the assertions allow on top of a bound, for a loaded machine. */
const MARGIN_MS = 3_000

interface Case {
  readonly leaseTtlMs: string
  readonly frozenMs: number
  /** What every accepted execution ends as. */
  readonly ends: ReadonlyArray<string>
  /** Lines the service logs about the hang, at warn or info. */
  readonly logs: ReadonlyArray<RegExp>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!ownPostgresAvailable)("Postgres hanging under load (its own server frozen, a real service process)", () => {
  const started: Array<{ postgres?: OwnPostgres; receiver?: Receiver; service?: ChildService }> = []

  afterAll(async () => {
    for (const { postgres, receiver, service } of started) {
      postgres?.thaw()
      if (service !== undefined && service.process.exitCode === null) await service.kill9()
      await receiver?.close()
      await postgres?.destroy()
    }
  })

  const frozen = async ({ leaseTtlMs, frozenMs, ends, logs }: Case) => {
    const run: (typeof started)[number] = {}
    started.push(run)
    const own = run.postgres = await startOwnPostgres()
    const certificate = makeCertificate()
    const receiver = run.receiver = await startReceiver(certificate)
    const port = await freePort()
    const service = run.service = await startProcess(serviceEnv(own.url, certificate, {
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000",
      SERVICE_LEASE_TTL_MS: leaseTtlMs
    }), port)
    const projects = ["p1", "p2", "p3", "p4"]
    for (const project of projects) await createEndpoint(service, project, receiver.url(`/hook/${project}`))

    const agent = new Agent({ keepAlive: true, maxSockets: 32 })
    const probeAgent = new Agent({ keepAlive: true, maxSockets: 8 })
    const outcomes: Array<Outcome> = []
    const probes: Array<Outcome> = []
    const traffic = { running: true }
    const worker = async (n: number) => {
      const project = projects[n % projects.length]!
      for (let i = 0; traffic.running; i++) {
        const body = i % 4 === 0
          ? { tool: "demo.sleep", userId: `u${n}`, input: { ms: 50 }, mode: "async" }
          : { tool: "demo.echo", userId: `u${n}`, input: { n, i } }
        outcomes.push(await call(agent, port, "POST", "/v1/execute", keyOf(project), body))
        await sleep(20)
      }
    }
    const reader = async () => {
      while (traffic.running) {
        outcomes.push(await call(agent, port, "GET", "/v1/executions?limit=5", keyOf("p1")))
        await sleep(100)
      }
    }
    // Each probe on its own loop, so that a slow one does not hide the others.
    const prober = (path: string) => async () => {
      while (traffic.running) {
        probes.push(await call(probeAgent, port, "GET", path, undefined))
        await sleep(200)
      }
    }

    // Long enough to be running while the server is frozen, recording their outcome after.
    const before = await Promise.all(projects.map((project) =>
      call(agent, port, "POST", "/v1/execute", keyOf(project), { tool: "demo.sleep", userId: "early", input: { ms: 3_000 }, mode: "async" })))
    expect(before.map((o) => o.status)).toEqual(projects.map(() => 202))

    const load = [...Array.from({ length: 8 }, (_, n) => worker(n)), reader(), prober("/readyz")(), prober("/healthz")(), prober("/metrics")()]
    await sleep(1_500)
    let frozenAt = 0
    let thawedAt = 0
    try {
      frozenAt = Date.now()
      own.freeze()
      await sleep(frozenMs)
    } finally {
      own.thaw()
      thawedAt = Date.now()
    }
    let recoveredAt = 0
    try {
      await eventually(() => outcomes.some((o) => o.sent > thawedAt && o.status === 200), 30_000, "a successful request after the thaw")
      recoveredAt = outcomes.filter((o) => o.sent > thawedAt && o.status === 200).map((o) => o.at).toSorted((a, b) => a - b)[0]!
      await sleep(1_500)
    } finally {
      // The loops end whatever happened, so that a failure leaves nothing running.
      traffic.running = false
      await Promise.all(load)
      agent.destroy()
      probeAgent.destroy()
    }

    // No request was cut, and every one got an answer the API knows.
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([])
    expect(outcomes.filter((o) => ![200, 202, 429, 503].includes(o.status ?? 0)).map((o) => o.body)).toEqual([])

    // Sent while frozen: answered within the bound (and a margin), never held until the thaw.
    const whileFrozen = outcomes.filter((o) => o.sent >= frozenAt && o.sent < thawedAt)
    expect(whileFrozen.length).toBeGreaterThan(0)
    expect(whileFrozen.filter((o) => o.at - o.sent > BOUND_MS + MARGIN_MS).map((o) => ({ path: o.path, waitedMs: o.at - o.sent }))).toEqual([])
    const unavailable = outcomes.filter((o) => o.status === 503)
    expect(unavailable.some((o) => o.at < thawedAt)).toBe(true)
    for (const answer of unavailable) {
      const body = JSON.parse(answer.body ?? "{}") as { error: { code: string; retryable: boolean }; requestId: string }
      expect(body.error).toMatchObject({ code: "provider_unavailable", retryable: true })
      expect(body.requestId).toMatch(/^req_/)
      expect(answer.retryAfter).toBe("1")
    }

    // Probes sent while frozen: /readyz 503 with the store failing, within its 2 s (and a
    // margin); /healthz 200; /metrics answered.
    const probed = (path: string) => probes.filter((p) => p.path === path && p.sent > frozenAt + 200 && p.at < thawedAt)
    const ready = probed("/readyz")
    expect(ready.length).toBeGreaterThan(2)
    for (const probe of ready) {
      expect(probe.status).toBe(503)
      expect((JSON.parse(probe.body ?? "{}") as { checks: { store: { status: string } } }).checks.store.status).toBe("failing")
      expect(probe.at - probe.sent).toBeLessThan(2_000 + MARGIN_MS)
    }
    const health = probed("/healthz")
    expect(health.length).toBeGreaterThan(2)
    expect(health.filter((p) => p.status !== 200 || p.at - p.sent > MARGIN_MS)).toEqual([])
    const metrics = probed("/metrics")
    expect(metrics.length).toBeGreaterThan(2)
    expect(metrics.filter((p) => p.status !== 200 || p.at - p.sent > 2_000 + MARGIN_MS).map((p) => p.at - p.sent)).toEqual([])
    const sentWhileFrozen = probes.filter((p) => p.sent >= frozenAt && p.sent < thawedAt)
    expect(sentWhileFrozen.filter((p) => p.at - p.sent > 2_000 + MARGIN_MS).map((p) => ({ path: p.path, waitedMs: p.at - p.sent }))).toEqual([])

    const first503 = unavailable.filter((o) => o.at >= frozenAt).map((o) => o.at).toSorted((a, b) => a - b)[0]
    const waits = (list: ReadonlyArray<Outcome>) => list.map((o) => o.at - o.sent)
    console.info(JSON.stringify({
      firstUnavailableAfterFreezeMs: first503 === undefined ? undefined : first503 - frozenAt,
      longestWaitWhileFrozenMs: Math.max(...waits(whileFrozen)),
      readyzMs: waits(ready),
      metricsMs: waits(metrics),
      healthzMaxMs: Math.max(...waits(health)),
      firstSuccessAfterThawMs: recoveredAt - thawedAt
    }))

    await eventually(async () => (await call(new Agent(), port, "GET", "/readyz", undefined)).status === 200, 15_000, "ready again")

    // Every accepted execution, before, during and after the freeze, finishes and is delivered.
    const accepted = [...before, ...outcomes]
      .filter((o) => o.path === "/v1/execute" && (o.status === 200 || o.status === 202))
      .map((o) => {
        const body = JSON.parse(o.body ?? "{}") as { executionId: string; projectId: string }
        return { executionId: body.executionId, project: body.projectId.replace(/^proj_/, "") }
      })
    expect(accepted.length).toBeGreaterThan(20)
    let unfinished: unknown
    try {
      await eventually(async () => {
        for (const { executionId, project } of accepted) {
          const record = await service.fetch(`/v1/executions/${executionId}`, { key: keyOf(project) })
          if (record.status !== 200) throw new Error(`accepted execution ${executionId} answered ${record.status}`)
          const body = (await record.json()) as { status: string; error: { code: string } | null }
          const end = body.status === "failed" ? `failed:${body.error?.code}` : body.status
          unfinished = body
          if (end === "pending" || end === "running") return undefined
          if (!ends.includes(end)) throw new Error(`accepted execution ${executionId} ended ${end}`)
        }
        return true
      }, 60_000, `every accepted execution to end as ${ends.join(" or ")}`)
    } catch (error) {
      // What a failure needs to be understood: the record that did not end and what the service
      // logged besides its request lines.
      const logged = logLines(service)
      console.error(JSON.stringify({ unfinished, frozenAt, thawedAt }), "\n", logged.slice(-200).join("\n"))
      throw error
    }
    const delivered = () => new Set(receiver.received.map((r) => (JSON.parse(r.rawBody) as { data: { executionId: string } }).data.executionId))
    await eventually(() => accepted.every(({ executionId }) => delivered().has(executionId)), 60_000, "a delivery for every accepted execution")

    // The operator's view: when the database stopped answering, and when it came back, once each.
    const lines = logLines(service)
    for (const wanted of logs) expect(lines.filter((line) => wanted.test(line)), String(wanted)).toHaveLength(1)
    // A hang is an outage like any other: warnings, and no line at error.
    expect(lines.filter((line) => line.includes(`"level":"error"`))).toEqual([])
  }

  /** What both cases log: the bound's verdict and the database's return. */
  const hangLogs = [
    /"level":"warn","message":"the database gave no answer within 5000 ms \(SERVICE_STORE_TIMEOUT_MS\): statements fail at once until it answers again/,
    /"level":"info","message":"the database answers again after \d+\.\d s"/,
    /"level":"warn","message":"runner lease: the database did not answer a renewal; retrying every \d+ ms"/
  ]

  it("answers 503 (retryable) within the bound while it hangs, /readyz and /metrics answer, recovers, loses nothing it accepted", () =>
    // The default lease (20 s) outlasts the freeze: every execution runs to its end.
    frozen({
      leaseTtlMs: "20000",
      frozenMs: 10_000,
      ends: ["succeeded"],
      logs: [...hangLogs, /"level":"info","message":"runner lease: the database answers again after \d+\.\d s; the lease was kept"/]
    }), 180_000)

  it("frozen past the runner lease: still answers within the bound, no request waits for the lease to come back", () =>
    frozen({
      leaseTtlMs: "5000",
      frozenMs: 9_000,
      ends: ["succeeded", "failed:execution_interrupted"],
      logs: [...hangLogs, /"level":"warn","message":"runner lease run_\w+ lost: its actors stopped; registering anew"/]
    }), 180_000)
})
