/**
 * A transaction left open on the Postgres server holds the log's feed back (followers take only
 * what committed before it), so webhooks wait for it. That is by design (commit order); what must
 * not be is an operator left without a clue: the service logs the holder at warn (its backend
 * pid, application, database and state) once it has held the feed SERVICE_FEED_HELD_WARN_SECONDS,
 * `/metrics` shows its age as `eventlog_feed_held_seconds`, and once it ends the feed moves again,
 * said at info, and the held webhook is delivered.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, logLines, startProcess } from "../support/Service.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, keyOf, serviceEnv } from "../support/Webhooks.ts"

const psqlAvailable = await new Promise<boolean>((resolve) => {
  const child = spawn("psql", ["--version"], { stdio: "ignore" })
  child.once("error", () => resolve(false))
  child.once("exit", (code) => resolve(code === 0))
})

describe.skipIf(!postgresAvailable || !psqlAvailable)("a transaction that holds the log's feed back", () => {
  let url: string
  let certificate: Certificate
  let receiver: Receiver
  let service: ChildService
  let holder: ChildProcess | undefined

  beforeAll(async () => {
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    url = await createTestDatabase("feedheld")
    service = await startProcess(serviceEnv(url, certificate, { SERVICE_FEED_HELD_WARN_SECONDS: "1" }), await freePort())
  }, 60_000)
  afterAll(async () => {
    holder?.kill("SIGKILL")
    await service?.stop().catch(() => undefined)
    await receiver?.close()
    if (url !== undefined) await dropTestDatabase(url)
  })

  const execute = async () => {
    const response = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { at: Date.now() } } })
    expect(response.status).toBe(200)
    return ((await response.json()) as { executionId: string }).executionId
  }
  const delivered = (executionId: string) =>
    receiver.received.some((r) => (JSON.parse(r.rawBody) as { data: { executionId: string } }).data.executionId === executionId)
  const heldGauge = async () => {
    const text = await (await service.fetch("/metrics")).text()
    const line = text.split("\n").find((l) => l.startsWith("eventlog_feed_held_seconds"))
    return line === undefined ? undefined : Number(line.split(" ").at(-1))
  }

  it("logs the holder, shows its age in /metrics, and delivers once it ends", async () => {
    await createEndpoint(service, "p1", receiver.url("/held"))
    const before = await execute()
    await eventually(() => delivered(before), 10_000, "a delivery before anything holds the feed")
    expect(await heldGauge()).toBeLessThan(1)

    // A session that takes an xid and stays in its transaction, as a console left open would.
    holder = spawn("psql", [url, "-v", "ON_ERROR_STOP=1", "-c", "BEGIN; SELECT pg_current_xact_id(); SELECT pg_sleep(6); COMMIT;"], {
      env: { ...process.env, PGAPPNAME: "held-by-test" },
      stdio: "ignore"
    })
    const ended = new Promise<number | null>((resolve) => holder!.once("exit", resolve))
    await eventually(async () => ((await heldGauge()) ?? 0) >= 1, 10_000, "the gauge to show the held feed")
    const held = await execute()
    const warning = await eventually(
      () => logLines(service).find((line) => line.includes(`"level":"warn"`) && line.includes("the log's feed is held back by an open transaction")),
      10_000,
      "the warning"
    )
    const fields = JSON.parse(warning) as Record<string, unknown>
    expect(fields).toMatchObject({ application: "held-by-test", database: new URL(url).pathname.slice(1), state: "active" })
    expect(fields.pid).toEqual(expect.any(Number))
    // Recorded, not yet delivered: the dispatcher waits for the holder.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect(delivered(held)).toBe(false)

    expect(await ended).toBe(0)
    await eventually(() => delivered(held), 15_000, "the held delivery once the transaction ended")
    await eventually(() => logLines(service).some((line) => line.includes(`"level":"info"`) && line.includes("the log's feed moves again")), 15_000, "the all-clear")
    expect(logLines(service).filter((line) => line.includes("the log's feed is held back"))).toHaveLength(1)
    expect(await heldGauge()).toBeLessThan(1)
  }, 60_000)
})
