/**
 * A secret key rotation is a rolling restart (docs/operations.md, "Rotating the secret key"):
 * for a while a process already on the new key (and the old one as the previous key) runs
 * beside one still on the old key alone. What the first seals meanwhile must open in the second:
 * a webhook signing secret (or the old process fails every attempt of that endpoint with
 * `secret_unavailable`) and a connection's credential (or it refuses every execution with it).
 * So a process seals under the previous key while a running process lacks the current one, and
 * under the current key once none does.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import { sealedValuesIn } from "../../infra/access/KeyCheck.ts"
import { makeKeyRing } from "../../infra/access/Secrets.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type ChildService, cleanupAfterAll, logLines, startProcess, startService } from "../support/Service.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, freePort, keyOf, serviceEnv } from "../support/Webhooks.ts"

const OLD = Buffer.alloc(32, 61)
const NEW = Buffer.alloc(32, 62)
const TOKEN = "xoxb-rolling-credential-6160"
const SWITCHED = "every running process holds SERVICE_SECRET_KEY: new secrets are sealed under it"

describe.skipIf(!postgresAvailable)("a rolling restart into a secret key rotation (two processes, Postgres)", () => {
  const cleanup = cleanupAfterAll()
  let url: string
  let certificate: Certificate
  let receiver: Receiver
  let slack: Server
  const slackAuthorizations: Array<string | undefined> = []

  beforeAll(async () => {
    url = await createTestDatabase("rolling")
    cleanup.push(() => dropTestDatabase(url))
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    cleanup.push(() => receiver.close())
    slack = createServer((request, response) => {
      slackAuthorizations.push(request.headers.authorization)
      request.resume()
      request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, channel: "C1", ts: "1.2" })))
    })
    await new Promise<void>((resolve) => slack.listen(0, "127.0.0.1", resolve))
    cleanup.push(() => new Promise<void>((resolve) => slack.close(() => resolve())))
  })

  const start = async (key: Buffer, previous?: Buffer): Promise<ChildService> => {
    const service = await startProcess(serviceEnv(url, certificate, {
      SERVICE_SECRET_KEY: key.toString("base64"),
      ...(previous === undefined ? {} : { SERVICE_SECRET_KEY_PREVIOUS: previous.toString("base64") }),
      SERVICE_SLACK_API_URL: `http://127.0.0.1:${(slack.address() as AddressInfo).port}`
    }), await freePort())
    cleanup.push(() => service.stop())
    return service
  }

  /** The endpoint's signing secret as the view keeps it, sealed. */
  const sealedSecretOf = async (endpointId: string) => {
    const rows = await runSql<{ row: unknown }>(url, `SELECT to_jsonb(t) AS row FROM v_webhook_endpoints t WHERE endpoint_id = '${endpointId}'`)
    const sealed = rows.flatMap((row) => sealedValuesIn(row.row))
    expect(sealed).toHaveLength(1)
    return sealed[0]!
  }

  /** A slack message with the connection's credential and a demo.echo whose delivery must verify, through `service`. */
  const exercise = async (service: ChildService, endpoint: { readonly endpointId: string; readonly secret: string; readonly path: string }, marker: string) => {
    const key = keyOf("p1")
    const posted = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "slack.post_message", userId: "u1", input: { channel: "C1", text: marker } } })
    expect(await posted.json()).toMatchObject({ status: "succeeded" })
    expect(slackAuthorizations.at(-1)).toBe(`Bearer ${TOKEN}`)
    const echoed = await service.fetch("/v1/execute", { method: "POST", key, json: { tool: "demo.echo", userId: "u1", input: { marker } } })
    const executionId = ((await echoed.json()) as { executionId: string }).executionId
    const delivery = await eventually(() => receiver.received.find((r) => r.path === endpoint.path && r.rawBody.includes(executionId)), 15_000, "the delivery")
    expect(verifyWebhook(endpoint.secret, delivery.headers, delivery.rawBody).ok).toBe(true)
    // Both executions' deliveries (the endpoint is new to this call), each finished on its first attempt.
    const records = await eventually(async () => {
      const all = await deliveriesOf(service, "p1", endpoint.endpointId)
      return all.length === 2 && all.every((record) => record.status !== "pending") ? all : undefined
    }, 15_000, "the delivery records")
    expect(records.map((record) => [record.status, record.attempts.length])).toEqual([["succeeded", 1], ["succeeded", 1]])
  }

  it("a process with the new key seals under the old one while a process on the old key alone runs, and under the new one once none does", async () => {
    const old = await start(OLD)
    const rotating = await start(NEW, OLD)

    // Made through the process that holds the new key, while the other holds only the old one.
    const endpoint = await createEndpoint(rotating, "p1", receiver.url("/rolling"))
    const connection = await rotating.fetch("/v1/connections", {
      method: "POST",
      key: keyOf("p1"),
      json: { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: TOKEN } }
    })
    expect(connection.status).toBe(201)
    expect(makeKeyRing(new Uint8Array(OLD)).open(await sealedSecretOf(endpoint.endpointId))).toBe(endpoint.secret)
    // Outside audit: a list cursor the rotating process made was 422 at the other (its MAC was
    // under the new key), so paging behind a load balancer failed mid-way.
    await createEndpoint(rotating, "p1", receiver.url("/rolling-second"))
    const firstPage = await (await rotating.fetch("/v1/webhooks?limit=1", { key: keyOf("p1") })).json() as { nextCursor?: string }
    expect(firstPage.nextCursor).toBeDefined()
    const secondPage = await old.fetch(`/v1/webhooks?limit=1&cursor=${encodeURIComponent(firstPage.nextCursor!)}`, { key: keyOf("p1") })
    expect(secondPage.status).toBe(200)

    // The process on the old key alone runs everything from here: it opens both.
    await rotating.stop()
    await exercise(old, { ...endpoint, path: "/rolling" }, "old key alone")

    // Once no running process lacks the new key, new secrets are sealed under it.
    const again = await start(NEW, OLD)
    await old.stop()
    await eventually(() => logLines(again).some((line) => line.includes(`"level":"info"`) && line.includes(SWITCHED)), 30_000, "the switch to the new key")
    expect(logLines(again).filter((line) => line.includes(SWITCHED))).toHaveLength(1)
    // Outside audit: a process on the old key alone could still start now (the check value stays
    // under the old key until `secrets reseal`), and then failed what was sealed under the new
    // key one request and one delivery at a time. It is refused at its start.
    await expect(startService(serviceEnv(url, certificate, { SERVICE_SECRET_KEY: OLD.toString("base64") })))
      .rejects.toThrow(/^SERVICE_SECRET_KEY: it does not open the data a rotation already sealed under a newer key in this database; start with that newer key as SERVICE_SECRET_KEY and this one as SERVICE_SECRET_KEY_PREVIOUS$/)
    // And the new key alone still is, until `secrets reseal` has moved the old key's values.
    await expect(startService(serviceEnv(url, certificate, { SERVICE_SECRET_KEY: NEW.toString("base64") })))
      .rejects.toThrow(/SERVICE_SECRET_KEY: it does not open the data sealed in this database/)
    const later = await createEndpoint(again, "p1", receiver.url("/rolling-later"))
    const onlyNew = makeKeyRing(new Uint8Array(NEW))
    expect(onlyNew.open(await sealedSecretOf(later.endpointId))).toBe(later.secret)
    await exercise(again, { ...later, path: "/rolling-later" }, "new key")
  }, 120_000)
})
