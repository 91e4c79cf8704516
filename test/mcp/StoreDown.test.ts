/**
 * The MCP gateway while its store is away (Postgres stopped): every request that needs the store
 * is answered as every `/v1` route answers it (docs/operations.md): 503 with the retryable
 * envelope, `Retry-After: 1` and `retryAfter: 1`, and no line at error. It answered 500
 * "Internal error." and logged each at error (outside audit). A real service process on a
 * Postgres of the test's own (test/support/OwnPostgres.ts).
 */
import { afterAll, describe, expect, it } from "vitest"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { makeCertificate } from "../support/WebhookReceiver.ts"
import { keyOf, serviceEnv } from "../support/Webhooks.ts"
import { initializeMessage, openSession, post } from "./support/Raw.ts"

describe.skipIf(!ownPostgresAvailable)("/mcp while Postgres is stopped (its own server, a real service process)", () => {
  let postgres: OwnPostgres | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    if (service !== undefined && service.process.exitCode === null) await service.kill9()
    await postgres?.destroy()
  })

  it("answers 503 with a retryable envelope and Retry-After, logs nothing at error, and serves again once Postgres is back", async () => {
    postgres = await startOwnPostgres()
    const port = await freePort()
    service = await startProcess(serviceEnv(postgres.url, makeCertificate(), { SERVICE_LOG_FORMAT: "json" }), port)
    const url = `http://127.0.0.1:${port}/mcp`
    const key = keyOf("p1")
    const session = await openSession(url, { key })
    const inSession = { key, session, accept: "application/json" }
    const call = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "demo.echo", arguments: { a: 1 }, _meta: { "dev.service/userId": "u1" } } })

    await postgres.stop()
    const cases: ReadonlyArray<readonly [string, unknown, typeof inSession | { key: string; accept: string }]> = [
      ["ping", { jsonrpc: "2.0", id: 1, method: "ping" }, inSession],
      ["tools/list", { jsonrpc: "2.0", id: 2, method: "tools/list" }, inSession],
      ["tools/call", call(3), inSession],
      ["tasks/get", { jsonrpc: "2.0", id: 4, method: "tasks/get", params: { taskId: "tsk_missing" } }, inSession],
      ["initialize", initializeMessage(), { key, accept: "application/json" }]
    ]
    for (const [what, body, options] of cases) {
      const response = await post(url, body, options)
      const text = await response.text()
      expect(response.status, `${what}: ${text}`).toBe(503)
      expect(response.headers.get("retry-after"), what).toBe("1")
      const envelope = JSON.parse(text) as { error: { code: string; retryable: boolean; retryAfter?: number }; requestId: string }
      expect(envelope.error, what).toMatchObject({ code: "provider_unavailable", retryable: true, retryAfter: 1 })
      expect(envelope.requestId, what).toBe(response.headers.get("request-id"))
    }
    const errors = service.output().split("\n").filter((line) => line.includes(`"level":"error"`))
    expect(errors).toEqual([])

    await postgres.start()
    await expect.poll(async () => (await post(url, { jsonrpc: "2.0", id: 9, method: "ping" }, inSession)).status, { timeout: 30_000, interval: 250 }).toBe(200)
  }, 120_000)
})
