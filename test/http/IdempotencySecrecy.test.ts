/**
 * The log cannot confirm a guess of an input (issue "Hardening", finding 8): an idempotency claim
 * carries a MAC of the tool and its input under a key derived from SERVICE_SECRET_KEY, not a
 * plain SHA-256 that anyone reading the log could test guesses against; replays still match.
 */
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { canonicalJson } from "../../infra/executions/Executions.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type InProcessService, startService } from "../support/Service.ts"

describe.skipIf(!postgresAvailable)("idempotency claims in the log", () => {
  let url: string
  let service: InProcessService
  beforeAll(async () => {
    url = await createTestDatabase("idem")
    service = await startService({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 4).toString("base64") })
  }, 60_000)
  afterAll(async () => {
    await service?.close()
    await dropTestDatabase(url)
  })

  it("hold no plain hash of the input, and a replay still finds its execution", async () => {
    const input = { pin: "1234" }
    const request = { tool: "demo.echo", input, userId: "u1", idempotencyKey: "key-secret-input" }
    const first = (await (await service.fetch("/v1/execute", { method: "POST", json: request })).json()) as { executionId: string }
    const again = (await (await service.fetch("/v1/execute", { method: "POST", json: request })).json()) as { executionId: string; replayed?: boolean }
    expect(again.executionId).toBe(first.executionId)
    expect(again.replayed).toBe(true)
    const claims = await runSql<{ data: Record<string, unknown> }>(url, `SELECT e.data FROM events e JOIN streams s USING (stream_id) WHERE s.stream_type = 'idempotency'`)
    expect(claims).toHaveLength(1)
    const plain = createHash("sha256").update(`demo.echo\u0000${canonicalJson(input)}`).digest("hex")
    const text = JSON.stringify(claims[0]!.data)
    expect(text).not.toContain(plain)
    expect(claims[0]!.data.inputHash).toBeUndefined()
    expect(claims[0]!.data.inputMac).toMatch(/^[A-Za-z0-9_-]{43}$/)
  })
})
