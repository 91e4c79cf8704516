/**
 * An append the service gave up on, applied after all (a Postgres that hangs, then resumes: the
 * store's bound abandons the statement, PgBoundedClient.ts, and the server commits it once it
 * runs again). A deferred trigger makes one chosen event's commit outlast the bound
 * (SERVICE_STORE_TIMEOUT_MS, 400 ms here): the service sees the store fail, the log has the event.
 *
 * - The start of a dispatch applied late: the dispatch's retry meets its own start in the log,
 *   and the tool still runs to its outcome (it used to take the start for a peer's and stop,
 *   leaving the execution `running` under a live owner, which no recovery touches).
 * - A request applied late (its caller was answered 503): the execution is in the log, pending
 *   under this process; it is run, not left pending for ever.
 * - A webhook lane's records (the delivery queued, its attempt's success) or the execution's
 *   outcome applied late: every accepted execution is still delivered, in order.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

const BOUND_MS = 400
const LATE_MS = 1_500

/** The next commit that inserts an event of `eventType` takes LATE_MS longer than the bound. */
const delayNext = (url: string, eventType: string) =>
  runSql(url, `INSERT INTO late_once (event_type) VALUES ('${eventType}')`)

const installDelay = async (url: string) => {
  await runSql(url, `CREATE TABLE late_once (event_type text PRIMARY KEY)`)
  await runSql(url, `CREATE FUNCTION late_commit() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM late_once WHERE event_type = NEW.event_type;
      IF FOUND THEN
        PERFORM pg_sleep(${LATE_MS / 1000});
      END IF;
      RETURN NULL;
    END $$`)
  // Deferred: it runs as the transaction commits, so the commit is what outlasts the bound.
  await runSql(url, `CREATE CONSTRAINT TRIGGER late_commit AFTER INSERT ON events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION late_commit()`)
}

describe.skipIf(!postgresAvailable)("an append applied after the service gave up on it", () => {
  let url: string
  let service: InProcessService | undefined

  beforeAll(async () => {
    url = await createTestDatabase("late")
  }, 60_000)
  afterEach(async () => {
    await service?.close()
    service = undefined
  })
  afterAll(async () => {
    if (url !== undefined) await dropTestDatabase(url)
  })

  const start = async () => {
    service = await startService({
      SERVICE_DATABASE_URL: url,
      SERVICE_SECRET_KEY: Buffer.alloc(32, 5).toString("base64"),
      SERVICE_STORE_TIMEOUT_MS: String(BOUND_MS)
    })
    if ((await runSql(url, `SELECT 1 FROM pg_proc WHERE proname = 'late_commit'`)).length === 0) await installDelay(url)
    return service
  }

  const statusOf = async (s: InProcessService, executionId: string) =>
    ((await (await s.fetch(`/v1/executions/${executionId}`, { key: KEY })).json()) as { status: string }).status

  it("a dispatch whose start was applied late still runs the tool to its outcome", async () => {
    const s = await start()
    await delayNext(url, "ExecutionStarted")
    const response = await s.fetch("/v1/execute", { method: "POST", key: KEY, json: { tool: "demo.sleep", userId: "u1", input: { ms: 10 }, mode: "async" } })
    expect(response.status).toBe(202)
    const { executionId } = (await response.json()) as { executionId: string }
    // The start's commit outlasted the bound, and was applied.
    await eventually(async () => (await runSql(url, `SELECT 1 FROM late_once`)).length === 0, 10_000, "the delayed commit to run")
    await eventually(async () => (await statusOf(s, executionId)) === "succeeded" || undefined, 20_000, "the execution to succeed")
    const events = await runSql<{ event_type: string }>(url, `SELECT event_type FROM events WHERE stream_id = 'execution-${executionId}' ORDER BY stream_version`)
    expect(events.map((e) => e.event_type)).toEqual(["ExecutionRequested", "ExecutionStarted", "ExecutionSucceeded"])
  }, 60_000)

  it("a request applied after its caller was answered 503 is run, not left pending", async () => {
    const s = await start()
    await delayNext(url, "ExecutionRequested")
    const response = await s.fetch("/v1/execute", { method: "POST", key: KEY, json: { tool: "demo.sleep", userId: "ghost", input: { ms: 10 }, mode: "async" } })
    expect(response.status).toBe(503)
    expect(((await response.json()) as { error: { retryable: boolean } }).error.retryable).toBe(true)
    await eventually(async () => (await runSql(url, `SELECT 1 FROM late_once`)).length === 0, 10_000, "the delayed commit to run")
    // Recorded all the same, under this process (the store's bound gave up on the commit, not the server).
    const [row] = await runSql<{ stream_id: string }>(url, `SELECT stream_id FROM events WHERE event_type = 'ExecutionRequested' AND data->>'userId' = 'ghost'`)
    expect(row).toBeDefined()
    const executionId = row!.stream_id.replace(/^execution-/, "")
    await eventually(async () => (await statusOf(s, executionId)) === "succeeded" || undefined, 30_000, "the execution to succeed")
  }, 60_000)

  // Outside audit (a Postgres frozen under load): a capped sync request's permit grant applied
  // after its caller was answered 503 held a slot of the project's cap for a minute, the time
  // after which a holder never recorded counts as free; the cap was one short meanwhile.
  it("a permit granted after its caller was answered 503 is freed once the store answers, not a minute later", async () => {
    const s = await start()
    await runSql(url, `CREATE TABLE IF NOT EXISTS late_permit_once (flag int PRIMARY KEY)`)
    await runSql(url, `CREATE OR REPLACE FUNCTION late_permit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM late_permit_once;
        IF FOUND THEN
          PERFORM pg_sleep(${LATE_MS / 1000});
        END IF;
        RETURN NULL;
      END $$`)
    await runSql(url, `DROP TRIGGER IF EXISTS late_permit ON execution_permit_slots`)
    await runSql(url, `CREATE CONSTRAINT TRIGGER late_permit AFTER UPDATE ON execution_permit_slots
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION late_permit()`)
    // The lane's slots exist (made on its first grant) before the grant that commits late.
    const first = await s.fetch("/v1/execute", { method: "POST", key: KEY, json: { tool: "demo.sleep", userId: "u1", input: { ms: 1 } } })
    expect(first.status).toBe(200)
    await runSql(url, `INSERT INTO late_permit_once VALUES (1)`)
    const refused = await s.fetch("/v1/execute", { method: "POST", key: KEY, json: { tool: "demo.sleep", userId: "permit-ghost", input: { ms: 1 } } })
    expect(refused.status).toBe(503)
    await eventually(async () => (await runSql(url, `SELECT 1 FROM late_permit_once`)).length === 0, 10_000, "the delayed grant to commit")
    // Its execution was never recorded: the slot goes back within seconds.
    const holders = () => runSql<{ execution_id: string }>(url, `SELECT s.execution_id FROM execution_permit_slots s
      WHERE s.execution_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e WHERE e.stream_id = 'execution-' || s.execution_id)`)
    await eventually(async () => (await holders()).length === 0 || undefined, 10_000, "the unrecorded holder's slot to be freed")
    expect((await runSql(url, `SELECT 1 FROM events WHERE data->>'userId' = 'permit-ghost'`)).length).toBe(0)
    await runSql(url, `DROP TRIGGER late_permit ON execution_permit_slots`)
  }, 60_000)

  // Webhooks: the lane's records applied late. Every accepted execution is still delivered, in
  // the order they were recorded, and each delivery ends succeeded.
  for (const [n, eventType] of (["DeliveryQueued", "DeliveryAttemptSucceeded", "ExecutionSucceeded"] as const).entries()) {
    it(`webhooks: ${eventType} applied late holds up no delivery and loses none`, async () => {
      const project = `p${n + 1}`
      const webhooks = await startMemoryWebhookService({
        SERVICE_DATABASE_URL: url,
        SERVICE_SECRET_KEY: Buffer.alloc(32, 5).toString("base64"),
        SERVICE_STORE_TIMEOUT_MS: String(BOUND_MS)
      })
      try {
        if ((await runSql(url, `SELECT 1 FROM pg_proc WHERE proname = 'late_commit'`)).length === 0) await installDelay(url)
        const endpoint = await createEndpoint(webhooks.service, project, webhooks.receiver.url(`/late/${eventType}`))
        webhooks.receiver.respond = () => ({ status: 200 })
        await delayNext(url, eventType)
        const accepted: Array<string> = []
        for (let i = 0; accepted.length < 6 && i < 200; i++) {
          const response = await webhooks.service.fetch("/v1/execute", { method: "POST", key: keyOf(project), json: { tool: "demo.echo", userId: "u1", input: { i } } })
          // 503 while the store is taken for hung (after the late commit's bound): asked again.
          if (response.status === 200) accepted.push(((await response.json()) as { executionId: string }).executionId)
          else expect(response.status).toBe(503)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        expect(accepted).toHaveLength(6)
        await eventually(async () => (await runSql(url, `SELECT 1 FROM late_once`)).length === 0, 10_000, "the delayed commit to run")
        const received = () =>
          webhooks.receiver.received.map((r) => (JSON.parse(r.rawBody) as { data: { executionId: string } }).data.executionId)
        await eventually(() => accepted.every((id) => received().includes(id)), 30_000, "a delivery of every accepted execution")
        // In order: each one's first delivery after the one recorded before it.
        const firsts = [...new Set(received())].filter((id) => accepted.includes(id))
        expect(firsts).toEqual(accepted)
        await eventually(async () => {
          const deliveries = await deliveriesOf(webhooks.service, project, endpoint.endpointId)
          return deliveries.length >= accepted.length && deliveries.every((d) => d.status === "succeeded") || undefined
        }, 30_000, "every delivery to end succeeded")
      } finally {
        await webhooks.close()
      }
    }, 90_000)
  }
})
