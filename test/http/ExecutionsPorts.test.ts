/**
 * Executions with the real ports on both stores: attachments read through the execution-bound
 * file interface, and connections resolved and handed to the adapter (a local fake Slack).
 * Records carry neither file bytes nor credentials.
 */
import { createHash, randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { errorCode, execute, expectRecordShape, getJson, type Json, modes, ROOMY } from "./support/Executions.ts"

const readBody = (request: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
  })

for (const mode of modes) {
  describe.skipIf(mode.skip)(`execution ports on ${mode.name}`, () => {
    let service: InProcessService
    let drop: () => Promise<void>
    let slack: Server
    const slackCalls: Array<{ authorization: string | undefined; body: string }> = []

    beforeAll(async () => {
      slack = createServer((request, response) => {
        void readBody(request).then((body) => {
          slackCalls.push({ authorization: request.headers.authorization, body })
          response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, channel: "C1", ts: "1.2" }))
        })
      })
      await new Promise<void>((resolve) => slack.listen(0, "127.0.0.1", resolve))
      const store = await mode.env()
      drop = store.drop
      service = await startService({
        ...ROOMY,
        ...store.env,
        SERVICE_SLACK_API_URL: `http://127.0.0.1:${(slack.address() as AddressInfo).port}`
      })
    })
    afterAll(async () => {
      await service?.close()
      await drop?.()
      slack?.close()
    })

    const stage = async (text: string) => {
      const response = await service.fetch("/v1/files", {
        method: "POST",
        json: { name: "secret-name.txt", content: Buffer.from(text).toString("base64"), mimeType: "text/plain" }
      })
      expect(response.status).toBe(201)
      return String(((await response.json()) as Json).fileId)
    }

    it("an attached file is read by demo.digest; the record lists ids only", async () => {
      const text = "file bytes that must not leak 5521"
      const fileId = await stage(text)
      const { status, body } = await execute(service, { tool: "demo.digest", input: { fileId }, userId: "u_files", attachments: [fileId, fileId] })
      expect(status).toBe(200)
      expect(body).toMatchObject({
        status: "succeeded",
        output: { sha256: createHash("sha256").update(text).digest("hex"), size: text.length },
        attachments: { count: 1, fileIds: [fileId] }
      })
      expectRecordShape(body)
      const all = JSON.stringify([body, (await getJson(service, "/v1/executions?userId=u_files")).body])
      expect(all).not.toContain("secret-name")
      expect(all).not.toContain("text/plain")
      expect(all).not.toContain(Buffer.from(text).toString("base64"))
    })

    it("a large file (read in many chunks, in several turns), sent with a declared length or chunked, is read back byte for byte", async () => {
      const bytes = randomBytes(3 * 1024 * 1024 + 17)
      const body = JSON.stringify({ name: "large.bin", content: bytes.toString("base64") })
      for (const framing of ["declared", "chunked"] as const) {
        const status = await new Promise<{ code: number; text: string }>((resolve, reject) => {
          const url = new URL(`${service.baseUrl}/v1/files`)
          const req = httpRequest({
            host: url.hostname,
            port: url.port,
            path: url.pathname,
            method: "POST",
            headers: {
              authorization: `Bearer ${KEY}`,
              "content-type": "application/json",
              ...(framing === "declared" ? { "content-length": String(Buffer.byteLength(body)) } : { "transfer-encoding": "chunked" })
            }
          }, (res) => {
            let text = ""
            res.on("data", (chunk: Buffer) => (text += chunk.toString()))
            res.on("end", () => resolve({ code: res.statusCode ?? 0, text }))
          })
          req.on("error", reject)
          // Written in pieces, as a slow client would.
          const piece = 256 * 1024
          for (let at = 0; at < body.length; at += piece) req.write(body.slice(at, at + piece))
          req.end()
        })
        expect(status.code, `${framing}: ${status.text}`).toBe(201)
        const fileId = String((JSON.parse(status.text) as Json).fileId)
        const { body: record } = await execute(service, { tool: "demo.digest", input: { fileId }, userId: "u_large", attachments: [fileId] })
        expect(record, framing).toMatchObject({
          status: "succeeded",
          output: { sha256: createHash("sha256").update(bytes).digest("hex"), size: bytes.length }
        })
      }
    })

    it("a live file that is not attached cannot be read", async () => {
      const fileId = await stage("other")
      const { status, body } = await execute(service, { tool: "demo.digest", input: { fileId }, userId: "u_files" })
      expect(status).toBe(200)
      expect(body).toMatchObject({ status: "failed", error: { code: "invalid_input" } })
    })

    it("a toolkit with a connection runs with its credentials; the record names the connection only", async () => {
      const token = "xoxb-credential-that-must-not-leak-7781"
      const created = await service.fetch("/v1/connections", {
        method: "POST",
        json: { userId: "u_slack", toolkit: "slack", authClass: "bearer", credentials: { token } }
      })
      expect(created.status).toBe(201)
      const connectionId = String(((await created.json()) as Json).connectionId)
      const { status, body } = await execute(service, { tool: "slack.post_message", input: { channel: "C1", text: "hi" }, userId: "u_slack" })
      expect(status).toBe(200)
      expect(body).toMatchObject({ status: "succeeded", connectionId, output: { channel: "C1", ts: "1.2" } })
      expect(slackCalls.at(-1)).toEqual({ authorization: `Bearer ${token}`, body: JSON.stringify({ channel: "C1", text: "hi" }) })
      expect(JSON.stringify(body)).not.toContain(token)
      // Another user has no connection for slack.
      const other = await execute(service, { tool: "slack.post_message", input: { channel: "C1", text: "hi" }, userId: "u_none" })
      expect(other.status).toBe(422)
      expect(errorCode(other.body)).toBe("invalid_input")
    })
  })
}

// Outside audit: a file attached to a queued execution that expired before it ran was refused as
// "File … is not attached to this execution", sending the user after the wrong cause.
describe("an attached file that expires before its queued execution runs", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({ ...ROOMY, SERVICE_FILE_TTL_MS: "1500" })
  })
  afterAll(() => service?.close())

  it("fails the execution saying the file expired, not that it is not attached", async () => {
    const staged = await service.fetch("/v1/files", { method: "POST", json: { name: "a.txt", content: Buffer.from("a").toString("base64") } })
    const fileId = String(((await staged.json()) as Json).fileId)
    // The demo toolkit's cap of 4 is full, so the digest waits for a permit past the file's TTL.
    for (let i = 0; i < 4; i++) await execute(service, { tool: "demo.sleep", input: { ms: 2500 }, userId: "u_ttl", mode: "async" })
    const queued = await execute(service, { tool: "demo.digest", input: { fileId }, userId: "u_ttl", attachments: [fileId], mode: "async" })
    expect(queued.body).toMatchObject({ status: "pending" })
    const executionId = String(queued.body.executionId)
    let record: Json = {}
    for (let i = 0; i < 100 && !["succeeded", "failed"].includes(String(record.status)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      record = (await getJson(service, `/v1/executions/${executionId}`)).body
    }
    expect(record).toMatchObject({ status: "failed", error: { code: "invalid_input", message: `File ${fileId} expired before the execution read it.` } })
  }, 20_000)
})
