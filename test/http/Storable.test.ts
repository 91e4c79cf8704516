/**
 * What the event log cannot keep never reaches it (issue "Hardening", finding 1): a NUL, a lone
 * surrogate or thousands of nesting levels in a request body is a 422 at the edge; an adapter's
 * output holding one fails its execution with `provider_error` instead of leaving it running; and
 * another project's executions go on meanwhile.
 */
import fc from "fast-check"
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, OTHER_KEY, startServiceOn } from "../support/Service.ts"

const GIF = Buffer.concat([Buffer.from("GIF89a", "latin1"), Buffer.from([0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0xff, 0xff, 0xff, 0x00])])

const post = (service: InProcessService, body: string, key?: string) =>
  service.fetch("/v1/execute", { method: "POST", headers: { "content-type": "application/json" }, body, ...(key === undefined ? {} : { key }) })

const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string; message: string } }).error

describe.each(["memory", "postgres"] as const)("unstorable values (%s)", (mode) => {
  let service: InProcessService
  let gifServer: Server
  let gifUrl: string
  /** What the local server answers next: any bytes a fuzz run picks. */
  let nextBody: Uint8Array = GIF
  beforeAll(async () => {
    gifServer = createServer((_, response) => response.writeHead(200, { "content-type": "application/octet-stream" }).end(nextBody))
    await new Promise<void>((resolve) => gifServer.listen(0, "127.0.0.1", resolve))
    gifUrl = `http://127.0.0.1:${(gifServer.address() as { port: number }).port}/pixel.gif`
    service = await startServiceOn(mode, "storable", { SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true", SERVICE_RATE_LIMIT_EXECUTE_BURST: "1000" })
  }, 60_000)
  afterAll(async () => {
    await service?.close()
    gifServer?.close()
  })

  it.each([
    ["a NUL character", `{"tool":"demo.echo","input":{"a":"x\\u0000y"},"userId":"u1","mode":"async"}`, "NUL"],
    ["a lone surrogate", `{"tool":"demo.echo","input":{"a":"\\ud800"},"userId":"u1"}`, "surrogate"],
    ["a NUL in a key", `{"tool":"demo.echo","input":{"a\\u0000":1},"userId":"u1"}`, "NUL"],
    ["nesting 5,000 levels deep", `{"tool":"demo.echo","input":{"a":${"[".repeat(5000)}${"]".repeat(5000)}},"userId":"u1"}`, "nested deeper"]
  ])("a body with %s is a 422 naming it", async (_, body, named) => {
    const response = await post(service, body)
    expect(response.status).toBe(422)
    const error = await errorOf(response)
    expect(error.code).toBe("invalid_input")
    expect(error.message).toContain(named)
  })

  // RFC 8259 section 7: a control character inside a string must be escaped. A raw NUL there is
  // no JSON, as a raw U+0001 is: 400 like any other body that is not JSON (outside audit).
  it.each([["a raw NUL", "\u0000"], ["a raw U+0001", "\u0001"]])("a body with %s inside a string is 400, not JSON", async (_, raw) => {
    const response = await post(service, `{"tool":"demo.echo","input":{"a":"x${raw}y"},"userId":"u1"}`)
    expect(response.status).toBe(400)
    const error = await errorOf(response)
    expect(error.code).toBe("invalid_input")
    expect(error.message).not.toContain("NUL")
  })

  it("twenty async GETs of a GIF fail with provider_error, none is left running, and another project's executions go on", async () => {
    const started = await Promise.all(Array.from({ length: 20 }, async () => {
      const response = await post(service, JSON.stringify({ tool: "http.request", input: { method: "GET", url: gifUrl }, userId: "u1", mode: "async" }))
      expect(response.status).toBe(202)
      return ((await response.json()) as { executionId: string }).executionId
    }))
    const other = await post(service, JSON.stringify({ tool: "demo.echo", input: { ok: true }, userId: "u9" }), OTHER_KEY)
    expect(other.status).toBe(200)
    expect(((await other.json()) as { status: string }).status).toBe("succeeded")
    for (const executionId of started) {
      let record: { status: string; error?: { code: string; message: string } } = { status: "pending" }
      for (let i = 0; i < 100 && (record.status === "pending" || record.status === "running"); i++) {
        record = await (await service.fetch(`/v1/executions/${executionId}`)).json() as typeof record
        if (record.status === "pending" || record.status === "running") await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(record.status).toBe("failed")
      expect(record.error?.code).toBe("provider_error")
      expect(record.error?.message).toContain("NUL")
    }
  }, 30_000)

  it("a GET of a body past 1 MiB succeeds, the body cut to fit the output cap and marked bodyTruncated", async () => {
    nextBody = new TextEncoder().encode("z".repeat(1_100_000))
    const response = await post(service, JSON.stringify({ tool: "http.request", input: { method: "GET", url: gifUrl }, userId: "u1" }))
    expect(response.status).toBe(200)
    const record = (await response.json()) as { status: string; output?: { status: number; body: string; bodyTruncated: boolean } }
    expect(record.status).toBe("succeeded")
    expect(record.output?.bodyTruncated).toBe(true)
    expect(record.output?.body.length).toBeGreaterThan(1_000_000)
    expect(JSON.stringify(record.output).length).toBeLessThanOrEqual(1024 * 1024)
  }, 30_000)

  it("any bytes an adapter reads end in a terminal record: succeeded, or failed with provider_error; never a 500", async () => {
    await fc.assert(fc.asyncProperty(
      fc.oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc.string({ unit: "binary", maxLength: 32 }).map((text) => new TextEncoder().encode(text)),
        fc.constantFrom(Buffer.from([0xed, 0xa0, 0x80]), Buffer.from("\u0000"), Buffer.from("[".repeat(3000)))
      ),
      async (bytes) => {
        nextBody = bytes
        const response = await post(service, JSON.stringify({ tool: "http.request", input: { method: "GET", url: gifUrl }, userId: "u1" }))
        expect(response.status).toBe(200)
        const record = (await response.json()) as { status: string; error?: { code: string } }
        expect(["succeeded", "failed"]).toContain(record.status)
        if (record.status === "failed") expect(record.error?.code).toBe("provider_error")
      }
    ), { numRuns: 40 })
  }, 60_000)
})
