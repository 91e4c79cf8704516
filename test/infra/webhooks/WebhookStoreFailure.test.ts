/**
 * A store that refuses a lane's attempt records does not make the lane send again (issue
 * "Hardening", finding 7): the same record is retried, backing off, and the receiver sees one
 * request per recorded attempt. Postgres refuses the records through a trigger that the test
 * switches on and off, while everything else the service writes still commits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { appendTerminal, pgLog } from "../../support/Executions.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../support/Database.ts"
import { type ChildService, startProcess } from "../../support/Service.ts"
import { createEndpoint, deliveriesOf, freePort, serviceEnv } from "../../support/Webhooks.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../../support/WebhookReceiver.ts"

describe.skipIf(!postgresAvailable)("webhook lanes when the store refuses their records", () => {
  let databaseUrl: string
  let certificate: Certificate
  let service: ChildService
  let log: ReturnType<typeof pgLog>
  let receiver: Receiver

  beforeAll(async () => {
    certificate = makeCertificate()
    databaseUrl = await createTestDatabase("whfail")
    service = await startProcess(serviceEnv(databaseUrl, certificate, { SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,60000,60000,60000,60000" }), await freePort())
    log = pgLog(databaseUrl)
    receiver = await startReceiver(certificate)
    await runSql(databaseUrl, `CREATE TABLE refuse_attempts (on_ boolean NOT NULL)`)
    await runSql(databaseUrl, `INSERT INTO refuse_attempts VALUES (false)`)
    await runSql(databaseUrl, `CREATE FUNCTION refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.event_type = 'DeliveryAttemptFailed' AND (SELECT on_ FROM refuse_attempts) THEN
          RAISE EXCEPTION 'attempt records refused for the test';
        END IF;
        RETURN NEW;
      END $$`)
    await runSql(databaseUrl, `CREATE TRIGGER refuse_attempt BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION refuse_attempt()`)
  }, 60_000)

  afterAll(async () => {
    await service?.stop()
    await log?.dispose()
    await receiver?.close()
    if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
  })

  it("sends once, retries the record (not the request) until it commits, then keeps the retry schedule", async () => {
    const endpoint = await createEndpoint(service, "p1", receiver.url("/fail"))
    receiver.respond = () => ({ status: 500 })
    await runSql(databaseUrl, `UPDATE refuse_attempts SET on_ = true`)
    await log.runPromise(appendTerminal("proj_p1", "succeeded"))
    await eventually(() => (receiver.received.length >= 1 ? true : undefined), 10_000, "first attempt")
    // Six seconds of refused records: the old lane restarted every second and sent again.
    await new Promise((resolve) => setTimeout(resolve, 6_000))
    expect(receiver.received).toHaveLength(1)
    await runSql(databaseUrl, `UPDATE refuse_attempts SET on_ = false`)
    const [record] = await eventually(async () => {
      const records = await deliveriesOf(service, "p1", endpoint.endpointId)
      return records[0]?.attempts.length === 1 && records[0].nextRetryAt !== undefined ? records : undefined
    }, 40_000, "the attempt recorded")
    expect(record?.attempts[0]).toMatchObject({ statusCode: 500 })
    expect(record?.status).not.toBe("succeeded")
    expect(receiver.received).toHaveLength(1)
  }, 60_000)
})
