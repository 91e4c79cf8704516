/** The benchmark's parts work (no timings are asserted: they depend on the machine). */
import { createServer, type Server } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { measure } from "../../bench/load.ts"
import { row } from "../../bench/Scenario.ts"
import { scenarios } from "../../bench/scenarios/index.ts"
import { formatTable } from "../../bench/Table.ts"

let server: Server
let baseUrl: string
let uploaded = 0

beforeAll(async () => {
  server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (uploaded += chunk.length))
    req.on("end", () => {
      res.writeHead(req.url === "/fail" ? 503 : 200, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  baseUrl = `http://127.0.0.1:${address !== null && typeof address === "object" ? address.port : 0}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe("bench load generator", () => {
  it("counts successes with percentiles, and failures by status", async () => {
    const ok = await measure({ url: `${baseUrl}/ok`, connections: 2, seconds: 1, warmupSeconds: 0.1 })
    expect(ok.requests).toBeGreaterThan(0)
    expect(ok.failures).toBe(0)
    expect(ok.p50Ms).toBeGreaterThan(0)
    expect(ok.p99Ms).toBeGreaterThanOrEqual(ok.p50Ms)
    expect(ok.requestsPerSecond).toBeCloseTo(ok.requests / 1, 5)

    const failing = await measure({ url: `${baseUrl}/fail`, connections: 2, seconds: 1, warmupSeconds: 0.1 })
    expect(failing.requests).toBe(0)
    expect(failing.failureKinds["503"]).toBe(failing.failures)
    expect(failing.failures).toBeGreaterThan(0)
  })

  it("sends request bodies and reports their rate", async () => {
    uploaded = 0
    const body = new Uint8Array(64 * 1024).fill(97)
    const result = await measure({ url: `${baseUrl}/upload`, method: "POST", body, connections: 2, seconds: 1, warmupSeconds: 0.1 })
    expect(result.requests).toBeGreaterThan(0)
    expect(result.bytesPerSecond).toBeCloseTo(result.requests * body.byteLength, 5)
    expect(uploaded).toBeGreaterThanOrEqual(result.requests * body.byteLength)
  })

  it("formats a table with one line per measurement", () => {
    const table = formatTable([
      row("GET /v1/me", "raw node:http", { requests: 10, failures: 0, failureKinds: {}, requestsPerSecond: 2, bytesPerSecond: 0, p50Ms: 1, p99Ms: 2 }),
      row("GET /v1/me", "memory", { requests: 5, failures: 1, failureKinds: { "429": 1 }, requestsPerSecond: 1, bytesPerSecond: 0, p50Ms: 1.5, p99Ms: 3 }, "50% of raw")
    ])
    const lines = table.split("\n")
    expect(lines).toHaveLength(4)
    expect(lines[0]).toMatch(/^scenario\s+target\s+throughput\s+p50 ms\s+p99 ms\s+ok\s+failed\s+note$/)
    expect(lines[3]).toContain("50% of raw; failures: 429×1")
  })

  it("scenario names are unique", () => {
    const names = scenarios.map((s) => s.name)
    expect(new Set(names).size).toBe(names.length)
    expect(names).toContain("GET /v1/me")
  })
})
