/**
 * The request line of `/mcp` (decisions.md section 9: one line per request with its request id)
 * names the request by the id its client got in `Request-Id`, as on every `/v1` route. Before,
 * the edge logged an id of its own and the gateway sent another (outside audit), so a client's
 * id found no request line, only the gateway's "MCP request failed" line.
 */
import { Layer, Logger, References } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { toRecord } from "../../infra/observability/Logging.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { ROOMY_LIMITS } from "./support/Gateway.ts"
import { headersFor, initializeMessage, openSession, post } from "./support/Raw.ts"

interface Line {
  readonly message: string
  readonly fields: Record<string, unknown>
}

const collector = (into: Array<Line>) =>
  Logger.layer([Logger.make((options) => {
    const record = toRecord(options)
    into.push({ message: record.message, fields: record.fields })
  })])

describe("/mcp request lines", () => {
  const lines: Array<Line> = []
  let service: InProcessService
  let url: string
  beforeAll(async () => {
    service = await startService(ROOMY_LIMITS, Layer.mergeAll(collector(lines), Layer.succeed(References.MinimumLogLevel, "Info")))
    url = `${service.baseUrl}/mcp`
  })
  afterAll(() => service.close())

  it("logs each request under the Request-Id its client got, envelopes and JSON-RPC errors alike", async () => {
    const session = await openSession(url)
    lines.length = 0
    const responses = [
      await post(url, initializeMessage(), { accept: "application/json" }),
      await post(url, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { session }),
      await post(url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { session, accept: "application/json" }),
      await post(url, { jsonrpc: "2.0", id: 3, method: "tools/list" }, { key: null }),
      await post(url, "{nope", { session }),
      await post(url, { jsonrpc: "2.0", id: 4, method: "ping" }, { session: "mcps_00000000000000000000000000000000" }),
      await fetch(url, { method: "GET", headers: headersFor({ session, accept: "application/json" }) }),
      await fetch(url, { method: "DELETE", headers: headersFor({ session }) })
    ]
    const ids: Array<string> = []
    for (const response of responses) {
      const text = await response.text()
      const id = response.headers.get("request-id") ?? ""
      expect(id, text).toMatch(/^req_/)
      if (response.status === 401) expect(JSON.parse(text)).toMatchObject({ requestId: id })
      ids.push(id)
    }
    const requestLines = () => lines.filter((line) => line.message === "request" && line.fields.route === "/mcp")
    await eventually(() => requestLines().length >= responses.length, 10_000, "the request lines")
    const logged = requestLines().map((line) => line.fields.requestId)
    expect(logged.toSorted()).toEqual(ids.toSorted())
    expect(new Set(ids).size).toBe(ids.length)
    for (const [i, response] of responses.entries()) {
      expect(requestLines().find((line) => line.fields.requestId === ids[i])?.fields.status).toBe(response.status)
    }
  })
})
