/**
 * Refusals made at the edge while the store is away: a request the edge refuses on its headers
 * (a media type that is not JSON, a declared size past the limit, a path or method that does not
 * exist) still takes its rate-limit token once its key holds (decisions.md section 2), and that
 * token lives in Postgres. With Postgres stopped, the take fails; such a request was then answered
 * a bare 500 with no body (the edge died), where every other request is answered 503 with a
 * retryable envelope (decisions.md section 9). A real service process on a Postgres of the
 * test's own (test/support/OwnPostgres.ts).
 */
import { request as httpRequest } from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { freePort } from "../support/Ports.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { makeCertificate } from "../support/WebhookReceiver.ts"
import { keyOf, serviceEnv } from "../support/Webhooks.ts"

interface Answer {
  readonly status: number | string
  readonly requestId?: string | undefined
  readonly body: string
}

/** One request on its own connection: its status and body, or the socket error that ended it. */
const send = (port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> =>
  new Promise((resolve) => {
    const req = httpRequest({ host: "127.0.0.1", port, method, path, headers, agent: false }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (text += chunk))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, requestId: res.headers["request-id"] as string | undefined, body: text }))
      res.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? "error", body: text }))
    })
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? "error", body: "" }))
    req.setTimeout(20_000, () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })))
    // A declared size with no body behind it: the edge must answer on the headers alone.
    if (body === undefined) req.end()
    else req.end(body)
  })

describe.skipIf(!ownPostgresAvailable)("edge refusals while Postgres is stopped (its own server, a real service process)", () => {
  let postgres: OwnPostgres | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    if (service !== undefined && service.process.exitCode === null) await service.kill9()
    await postgres?.destroy()
  })

  it("answers every refusal that takes a token 503 with a retryable envelope, never a bare 500", async () => {
    postgres = await startOwnPostgres()
    const port = await freePort()
    // A burst below 100 lends no tokens to the process (infra/access/PgRateLimiter.ts): every
    // take is a statement.
    service = await startProcess(serviceEnv(postgres.url, makeCertificate(), { SERVICE_RATE_LIMIT_REQUEST_BURST: "50" }), port)
    const auth = { authorization: `Bearer ${keyOf("p1")}` }
    // The key is known to the process before Postgres goes: its check needs no store.
    expect((await send(port, "GET", "/v1/me", auth)).status).toBe(200)

    await postgres.stop()
    const cases: ReadonlyArray<readonly [string, string, string, Record<string, string>, string | undefined]> = [
      ["a media type that is not JSON", "POST", "/v1/webhooks", { ...auth, "content-type": "text/plain" }, "hello"],
      ["a declared size past the limit", "POST", "/v1/webhooks", { ...auth, "content-type": "application/json", "content-length": "999999999" }, undefined],
      ["a path that does not exist", "GET", "/v1/nowhere", auth, undefined],
      ["a method the path does not take", "DELETE", "/v1/me", auth, undefined],
      ["a JSON body (the token before the body)", "POST", "/v1/webhooks", { ...auth, "content-type": "application/json" }, "{}"],
      ["a request the API answers", "GET", "/v1/me", auth, undefined]
    ]
    for (const [what, method, path, headers, body] of cases) {
      const answer = await send(port, method, path, headers, body)
      expect(answer.status, `${what}: ${answer.body}`).toBe(503)
      const envelope = JSON.parse(answer.body) as { error: { code: string; retryable: boolean }; requestId: string }
      expect(envelope.error.code, what).toBe("provider_unavailable")
      expect(envelope.error.retryable, what).toBe(true)
      expect(envelope.requestId, what).toBe(answer.requestId)
    }
  }, 120_000)
})
