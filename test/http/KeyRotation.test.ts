/**
 * The secret key end to end (decisions.md section 9): data sealed under one key is never
 * silently unreadable. A service refuses a key that does not open its database; with the new key
 * and SERVICE_SECRET_KEY_PREVIOUS it goes on signing webhooks and using connections sealed under
 * the old one; `secrets reseal` moves every sealed value under the new key, after which the old
 * key is not needed for anything.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import { sealedValuesIn } from "../../infra/access/KeyCheck.ts"
import { makeKeyRing } from "../../infra/access/Secrets.ts"
import { runCli as cli, startCli } from "../support/Cli.ts"
import { createTestDatabase, dropTestDatabase, holdInTransaction, postgresAvailable, runSql } from "../support/Database.ts"
import { startService } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, KEYS, keyOf } from "../support/Webhooks.ts"

const OLD = Buffer.alloc(32, 31)
const NEW = Buffer.alloc(32, 32)
const TOKEN = "xoxb-rotated-credential-5150"

describe.skipIf(!postgresAvailable)("secret key rotation (Postgres)", () => {
  let url: string
  let receiver: Receiver
  let slack: Server
  const slackAuthorizations: Array<string | undefined> = []
  const original = getCACertificates("default")

  beforeAll(async () => {
    url = await createTestDatabase("rotation")
    const certificate = makeCertificate()
    setDefaultCACertificates([...original, certificate.cert])
    receiver = await startReceiver(certificate)
    slack = createServer((request, response) => {
      slackAuthorizations.push(request.headers.authorization)
      request.resume()
      request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, channel: "C1", ts: "1.2" })))
    })
    await new Promise<void>((resolve) => slack.listen(0, "127.0.0.1", resolve))
  })
  afterAll(async () => {
    await receiver?.close()
    slack?.close()
    setDefaultCACertificates(original)
    if (url !== undefined) await dropTestDatabase(url)
  })

  const env = (key: Buffer, previous?: Buffer, database = url) => ({
    SERVICE_DATABASE_URL: database,
    SERVICE_SECRET_KEY: key.toString("base64"),
    ...(previous !== undefined ? { SERVICE_SECRET_KEY_PREVIOUS: previous.toString("base64") } : {}),
    SERVICE_API_KEYS: KEYS,
    SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
    SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,100,100,100,100",
    SERVICE_SLACK_API_URL: `http://127.0.0.1:${(slack.address() as AddressInfo).port}`
  })

  /** Runs a slack message (the connection's credential) and a demo.echo (a delivery); checks both. */
  const exercise = async (service: Awaited<ReturnType<typeof startService>>, secret: string, marker: string) => {
    const key = keyOf("p1")
    const posted = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "slack.post_message", userId: "u1", input: { channel: "C1", text: marker } } })
    expect(((await posted.json()) as { status: string }).status).toBe("succeeded")
    expect(slackAuthorizations.at(-1)).toBe(`Bearer ${TOKEN}`)
    const echoed = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { marker } } })
    const executionId = ((await echoed.json()) as { executionId: string }).executionId
    const delivery = await eventually(() => receiver.received.find((r) => r.rawBody.includes(executionId) && r.rawBody.includes("demo.echo")), 15_000, "the delivery")
    expect(verifyWebhook(secret, delivery.headers, delivery.rawBody).ok).toBe(true)
  }

  it("refuses a key that does not open the data; reads old data with the previous key; reseal moves all of it under the new key", async () => {
    // Under the old key: an endpoint (its signing secret), a connection (its credential), an
    // async execution (its sealed input).
    const first = await startService(env(OLD))
    const endpoint = await createEndpoint(first, "p1", receiver.url("/rotation"))
    const connection = await first.fetch("/v1/connections", {
      method: "POST",
      key: keyOf("p1"),
      json: { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } }
    })
    expect(connection.status).toBe(201)
    const queued = await first.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { sealed: "input" }, mode: "async" } })
    expect(queued.status).toBe(202)
    await exercise(first, endpoint.secret, "old key")
    await first.close()

    // The new key alone does not open what the old one sealed: no start.
    await expect(startService(env(NEW))).rejects.toThrow(/SERVICE_SECRET_KEY: it does not open the data sealed in this database/)

    // A process still on the old key alone (a rolling restart has not reached it), and one with
    // the new key and the old one as the previous: everything still opens. (A process on the old
    // key alone that starts after the new key has sealed alone is refused: RollingRotation.test.ts.)
    const stale = await startService(env(OLD))
    const rotating = await startService(env(NEW, OLD))
    await exercise(rotating, endpoint.secret, "rotating")

    // Re-sealing now would leave the old process opening nothing, so the command refuses, names
    // it, and changes nothing (it goes on working).
    const refused = await cli(["secrets", "reseal"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: OLD.toString("base64") })
    expect(refused.code).toBe(1)
    expect(refused.stdout).toBe("")
    expect(refused.stderr.trim()).toMatch(new RegExp(`^error: 1 running process does not hold SERVICE_SECRET_KEY \\(\\S+ pid ${process.pid}\\): restart it .*; nothing was re-sealed$`))
    await exercise(stale, endpoint.secret, "stale after the refusal")
    await stale.close()
    await rotating.close()

    const resealed = await cli(["secrets", "reseal"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: OLD.toString("base64") })
    expect(resealed.stderr).toBe("")
    expect(resealed.code).toBe(0)
    expect(resealed.stdout).toMatch(/re-sealed \d+ values/)
    expect(resealed.stdout).toContain("SERVICE_SECRET_KEY_PREVIOUS may be removed")

    // Every sealed value in the log and in every table opens under the new key alone.
    const onlyNew = makeKeyRing(new Uint8Array(NEW))
    const events = await runSql<{ data: unknown }>(url, "SELECT data FROM events")
    const tables = await runSql<{ row: unknown }>(url, `
      SELECT to_jsonb(t) AS row FROM v_webhook_endpoints t UNION ALL SELECT to_jsonb(t) FROM v_connections t
      UNION ALL SELECT to_jsonb(t) FROM secret_key_check t`)
    const sealed = [...events.map((row) => row.data), ...tables.map((row) => row.row)].flatMap((value) => sealedValuesIn(value))
    expect(sealed.length).toBeGreaterThanOrEqual(6)
    expect(sealed.filter((value) => onlyNew.open(value) === undefined)).toEqual([])

    // A second run finds nothing left to do, and counts as already re-sealed exactly what the
    // first found in all: a cell the first run rewrote is not visited twice (an UPDATE moves the
    // row further along the table).
    const again = await cli(["secrets", "reseal"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: OLD.toString("base64") })
    expect(again.stdout).toMatch(/re-sealed 0 values/)
    const totals = (stdout: string) => {
      const [, resealedCount = "", current = ""] = /re-sealed (\d+) values .*; (\d+) were already under it/.exec(stdout) ?? []
      return { resealed: Number(resealedCount), current: Number(current) }
    }
    const firstRun = totals(resealed.stdout)
    expect(firstRun.resealed).toBeGreaterThan(0)
    expect(totals(again.stdout).current).toBe(firstRun.resealed + firstRun.current)

    // Outside audit: with the new key alone, the last line named a previous key that was not set.
    const alone = await cli(["secrets", "reseal"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: NEW.toString("base64") })
    expect(alone.code).toBe(0)
    expect(alone.stdout).toMatch(/^re-sealed 0 values under SERVICE_SECRET_KEY .*\nevery sealed value opens under SERVICE_SECRET_KEY\n$/)
    expect(alone.stdout).not.toContain("PREVIOUS")

    // The old key is gone: the service starts, signs and uses credentials as before.
    const after = await startService(env(NEW))
    await exercise(after, endpoint.secret, "new key only")
    await after.close()
  }, 120_000)

  /** Until a reseal's UPDATE of the endpoints' view waits for a row lock. */
  const resealWaitingOnEndpoints = (database: string) =>
    eventually(async () => {
      const waiting = await runSql<{ n: number }>(database, `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE "v_webhook_endpoints"%'`)
      return (waiting[0]?.n ?? 0) > 0 || undefined
    }, 30_000, "the reseal waiting for the endpoints' lock")

  it("re-seals the key check last: a reseal stopped part way leaves the new key alone refused while other values still need the old one", async () => {
    const database = await createTestDatabase("rotation_order")
    try {
      const first = await startService(env(OLD, undefined, database))
      await createEndpoint(first, "p1", receiver.url("/rotation-order"))
      await first.close()
      // Every endpoint row locked: the reseal stops at the endpoints' view and waits there, as
      // one interrupted there (a crash, a ^C) would have stopped.
      const lock = await holdInTransaction(database, "SELECT * FROM v_webhook_endpoints FOR UPDATE")
      const keys = { SERVICE_DATABASE_URL: database, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: OLD.toString("base64") }
      const running = startCli(["secrets", "reseal"], keys)
      try {
        await resealWaitingOnEndpoints(database)
        // The endpoint's secret is still under the old key only, and so is the check value: the
        // new key alone is refused at start rather than failing that endpoint's deliveries.
        const onlyNew = makeKeyRing(new Uint8Array(NEW))
        const endpoints = await runSql<{ row: unknown }>(database, "SELECT to_jsonb(t) AS row FROM v_webhook_endpoints t")
        expect(endpoints.flatMap((row) => sealedValuesIn(row.row)).filter((value) => onlyNew.open(value) === undefined)).toHaveLength(1)
        await expect(startService(env(NEW, undefined, database))).rejects.toThrow(/SERVICE_SECRET_KEY: it does not open the data sealed in this database/)
      } finally {
        await lock.release()
      }
      // Let through, it completes; then the new key alone starts.
      const done = await running.finished
      expect(done.code).toBe(0)
      expect(done.stdout).toContain("SERVICE_SECRET_KEY_PREVIOUS may be removed")
      const after = await startService(env(NEW, undefined, database))
      await after.close()
    } finally {
      await dropTestDatabase(database)
    }
  }, 120_000)

  // docs/operations.md: an operator command that fails prints one `error: …` line on stderr,
  // nothing on stdout, and exits 1.
  it("a reseal whose keys open nothing fails with one line on stderr and nothing on stdout", async () => {
    const database = await createTestDatabase("rotation_unreadable")
    try {
      const first = await startService(env(OLD, undefined, database))
      await createEndpoint(first, "p1", receiver.url("/rotation-unreadable"))
      await first.close()
      const other = Buffer.alloc(32, 33)
      const run = await startCli(["secrets", "reseal"], { SERVICE_DATABASE_URL: database, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: other.toString("base64") }).finished
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      expect(run.stderr).toMatch(/^error: [1-9]\d* sealed values open under neither SERVICE_SECRET_KEY nor SERVICE_SECRET_KEY_PREVIOUS: keep the key that sealed them \(re-sealed 0 values; 0 were already under SERVICE_SECRET_KEY\)\n$/)
    } finally {
      await dropTestDatabase(database)
    }
  }, 120_000)

  it("a reseal that meets a row changed under it says to run it again, on stderr, and exits 1; the next run completes", async () => {
    const database = await createTestDatabase("rotation_moved")
    try {
      const first = await startService(env(OLD, undefined, database))
      await createEndpoint(first, "p1", receiver.url("/rotation-moved"))
      await first.close()
      // The endpoint's row rewritten (its secret untouched, under the old key) by a transaction
      // that commits while the reseal waits to update the version it read.
      const writer = await holdInTransaction(database, "UPDATE v_webhook_endpoints SET endpoint_id = endpoint_id")
      const keys = { SERVICE_DATABASE_URL: database, SERVICE_SECRET_KEY: NEW.toString("base64"), SERVICE_SECRET_KEY_PREVIOUS: OLD.toString("base64") }
      const running = startCli(["secrets", "reseal"], keys)
      try {
        await resealWaitingOnEndpoints(database)
      } finally {
        await writer.release()
      }
      const run = await running.finished
      expect(run.code).toBe(1)
      expect(run.stdout).toBe("")
      expect(run.stderr).toMatch(/^error: 1 rows changed while being re-sealed; run the command again to check them \(re-sealed \d+ values; \d+ were already under SERVICE_SECRET_KEY\)\n$/)
      // Not complete, so the check value was left under the old key: the new key alone is refused.
      await expect(startService(env(NEW, undefined, database))).rejects.toThrow(/SERVICE_SECRET_KEY: it does not open the data sealed in this database/)
      const again = await startCli(["secrets", "reseal"], keys).finished
      expect(again.stderr).toBe("")
      expect(again.code).toBe(0)
      // (The scan may have met the row's new version further along the table already: the first
      // run cannot tell, so it asks for the second.)
      expect(again.stdout).toMatch(/^re-sealed \d+ values under SERVICE_SECRET_KEY .*\nevery sealed value opens under SERVICE_SECRET_KEY: SERVICE_SECRET_KEY_PREVIOUS may be removed\n$/)
      const after = await startService(env(NEW, undefined, database))
      await after.close()
    } finally {
      await dropTestDatabase(database)
    }
  }, 120_000)
})
