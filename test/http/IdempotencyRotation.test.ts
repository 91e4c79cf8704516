/**
 * Idempotency keys outlive a secret key rotation (docs/executions.md, "Idempotency"): a request
 * made under the old key replays after the rotation is complete (new key alone, the previous
 * one removed after `secrets reseal`), through HTTP and through MCP's default keys. A claim
 * holds a MAC of the input under a key of the database's own, sealed like any other secret, so
 * `secrets reseal` carries it to the new key; the input itself is never stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { messageOf, openSession, post } from "../mcp/support/Raw.ts"
import { runCli } from "../support/Cli.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { KEY, startService } from "../support/Service.ts"

const OLD = Buffer.alloc(32, 51).toString("base64")
const NEW = Buffer.alloc(32, 52).toString("base64")
const USER = { "x-service-user-id": "user_1" }

interface Record {
  readonly executionId: string
  readonly replayed?: boolean
}

describe.skipIf(!postgresAvailable)("idempotency keys across a secret key rotation (Postgres)", () => {
  let url: string

  beforeAll(async () => {
    url = await createTestDatabase("idemrot")
  })
  afterAll(async () => {
    if (url !== undefined) await dropTestDatabase(url)
  })

  const env = (key: string, previous?: string) => ({
    SERVICE_DATABASE_URL: url,
    SERVICE_SECRET_KEY: key,
    ...(previous !== undefined ? { SERVICE_SECRET_KEY_PREVIOUS: previous } : {})
  })

  const execute = async (service: Awaited<ReturnType<typeof startService>>, input: unknown) => {
    const response = await service.fetch("/v1/execute", {
      method: "POST",
      key: KEY,
      headers: { "idempotency-key": "rotation-key-1" },
      json: { tool: "demo.echo", userId: "user_1", input }
    })
    return { status: response.status, body: (await response.json()) as Record }
  }

  const mcpCall = async (service: Awaited<ReturnType<typeof startService>>, session: string, args: unknown) => {
    const message = await messageOf(await post(`${service.baseUrl}/mcp`, {
      jsonrpc: "2.0",
      id: 41,
      method: "tools/call",
      params: { name: "demo.echo", arguments: args }
    }, { session, headers: USER }))
    const result = message.result as { _meta?: { "dev.service/execution"?: { executionId: string }; "dev.service/error"?: { code: string } } }
    return { executionId: result._meta?.["dev.service/execution"]?.executionId, error: result._meta?.["dev.service/error"]?.code }
  }

  it("a request made under the old key replays under the new key alone, after secrets reseal", async () => {
    const first = await startService(env(OLD))
    const made = await execute(first, { hello: "before" })
    expect(made.status).toBe(200)
    const session = await openSession(`${first.baseUrl}/mcp`, { headers: USER })
    const called = await mcpCall(first, session, { via: "mcp" })
    expect(called.error).toBeUndefined()
    expect(called.executionId).toMatch(/^exe_/)
    await first.close()

    const rotating = await startService(env(NEW, OLD))
    const duringRotation = await execute(rotating, { hello: "before" })
    expect(duringRotation).toEqual({ status: 200, body: expect.objectContaining({ executionId: made.body.executionId, replayed: true }) })
    await rotating.close()

    const resealed = await runCli(["secrets", "reseal"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: NEW, SERVICE_SECRET_KEY_PREVIOUS: OLD })
    expect(resealed.stderr).toBe("")
    expect(resealed.code).toBe(0)
    expect(resealed.stdout).toContain("SERVICE_SECRET_KEY_PREVIOUS may be removed")

    // The rotation is complete: the old key is gone.
    const after = await startService(env(NEW))
    const replayed = await execute(after, { hello: "before" })
    expect(replayed).toEqual({ status: 200, body: expect.objectContaining({ executionId: made.body.executionId, replayed: true }) })
    // The same key with another input is still refused.
    const other = await execute(after, { hello: "other" })
    expect(other.status).toBe(422)
    // MCP's default key (mcp:<session>:<json-rpc id>): the same call again in the same session.
    expect(await mcpCall(after, session, { via: "mcp" })).toEqual({ executionId: called.executionId, error: undefined })
    expect((await mcpCall(after, session, { via: "other" })).error).toBe("invalid_input")
    await after.close()
  }, 120_000)
})
