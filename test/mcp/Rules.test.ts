/**
 * The gateway's pure rules: search ranking, listing, the user precedence, the task status
 * mapping and ttl, the shape of results, and the configuration it reads.
 */
import { ConfigProvider, Effect } from "effect"
import { describe, expect, it } from "vitest"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { callUser, headerMatches, sessionUser } from "../../mcp/Identity.ts"
import { isLoopbackHost, mcpSettings } from "../../mcp/McpSettings.ts"
import { clampTtl, taskStatus } from "../../mcp/Tasks.ts"
import { listFor, searchTools } from "../../mcp/ToolCatalog.ts"
import { recordResult } from "../../mcp/ToolResults.ts"

const base = {
  executionId: "exe_1",
  projectId: "p",
  userId: "u",
  tool: "demo.echo",
  toolVersion: "1.0.0",
  catalogVersion: "c",
  mode: "sync" as const,
  createdAt: "2026-01-01T00:00:00.000Z"
}

const settingsFrom = (env: Record<string, string>) =>
  Effect.runPromise(mcpSettings.pipe(Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)))))

describe("MCP rules", () => {
  it("ranks search results by the query's words in name, toolkit, capability and description", () => {
    const cards = searchTools("github issue", 10)
    expect(cards[0]?.name).toBe("github.create_issue")
    expect(searchTools("zzzz-nothing", 10)).toEqual([])
    expect(searchTools("demo", 2)).toHaveLength(2)
    expect(searchTools("sleep", 1)[0]).toMatchObject({ name: "demo.sleep", input: { properties: { ms: "integer" }, required: ["ms"] } })
  })

  it("lists the built-ins first, provider tools only in catalog mode, filtered by usable toolkits", () => {
    expect(listFor("search", false, () => true).map((t) => t.name)).toEqual(["service.search_tools", "service.execute_tool"])
    const names = listFor("catalog", false, (toolkit) => toolkit === "demo").map((t) => t.name)
    expect(names).toEqual(["service.search_tools", "service.execute_tool", "demo.echo", "demo.sleep", "demo.fail", "demo.digest"])
  })

  it("puts SERVICE_USER_ID before the header before _meta, and holds pinned keys to their user", () => {
    expect(sessionUser("cfg", "hdr", undefined)).toEqual({ userId: "cfg" })
    expect(sessionUser(undefined, "hdr", undefined)).toEqual({ userId: "hdr" })
    expect(sessionUser(undefined, undefined, "pin")).toEqual({ userId: "pin" })
    expect(sessionUser("other", undefined, "pin")).toMatchObject({ code: "auth_insufficient_scope" })
    expect(sessionUser(undefined, "bad user!", undefined)).toMatchObject({ code: "invalid_input" })
    expect(callUser(undefined, undefined, "meta", undefined)).toEqual({ userId: "meta" })
    expect(callUser("session", undefined, "meta", undefined)).toEqual({ userId: "session" })
    expect(callUser(undefined, undefined, undefined, undefined)).toMatchObject({ code: "invalid_input" })
    expect(callUser("pin", undefined, "other", "pin")).toMatchObject({ code: "auth_insufficient_scope" })
    expect(headerMatches(undefined, "a", "b")).toBe(false)
    expect(headerMatches("cfg", "a", "b")).toBe(true)
    expect(headerMatches(undefined, "a", undefined)).toBe(true)
  })

  it("maps execution statuses to task statuses and clamps ttl to 1 min..24 h", () => {
    expect((["pending", "running", "succeeded", "failed", "cancelled"] as const).map(taskStatus)).toEqual([
      "working",
      "working",
      "completed",
      "failed",
      "cancelled"
    ])
    expect([undefined, 0, 60_001.4, 10 ** 9].map(clampTtl)).toEqual([3_600_000, 60_000, 60_001, 86_400_000])
  })

  it("shapes results: success with structuredContent only for objects, failures and unfinished records as isError", () => {
    const succeeded: ExecutionRecord = { ...base, status: "succeeded", output: [1, 2], latencyMs: 3 }
    expect(recordResult(succeeded)).toEqual({
      content: [{ type: "text", text: "[1,2]" }],
      _meta: { "dev.service/execution": { executionId: "exe_1", tool: "demo.echo", toolVersion: "1.0.0", catalogVersion: "c", status: "succeeded", latencyMs: 3 } }
    })
    const running: ExecutionRecord = { ...base, status: "running", startedAt: base.createdAt }
    expect(recordResult(running)).toMatchObject({ isError: true, _meta: { "dev.service/error": { code: "timeout" }, "dev.service/execution": { status: "running" } } })
  })

  it("reads its configuration: modes, allowed origins, the user and loopback binding", async () => {
    const defaults = await settingsFrom({})
    expect(defaults).toMatchObject({ tools: "catalog", userId: undefined, baseUrl: "http://localhost:8080", loopbackHostsOnly: true })
    expect([...defaults.allowedOrigins]).toEqual(["http://localhost:8080"])
    const set = await settingsFrom({
      SERVICE_MCP_TOOLS: "search",
      SERVICE_USER_ID: "u1",
      SERVICE_BASE_URL: "https://api.example.com/",
      SERVICE_MCP_ALLOWED_ORIGINS: "https://a.example.com, http://B.example.com:3000"
    })
    expect(set).toMatchObject({ tools: "search", userId: "u1", baseUrl: "https://api.example.com", loopbackHostsOnly: false })
    expect([...set.allowedOrigins]).toEqual(["https://api.example.com", "https://a.example.com", "http://b.example.com:3000"])
    await expect(settingsFrom({ SERVICE_MCP_TOOLS: "all" })).rejects.toThrow()
    await expect(settingsFrom({ SERVICE_MCP_ALLOWED_ORIGINS: "not a url" })).rejects.toThrow(/SERVICE_MCP_ALLOWED_ORIGINS/)
    // The Host check guards a service reachable on loopback only (the development key's default,
    // or SERVICE_HOST on loopback); one that listens on the network serves clients that name it
    // by any host, and they send no Origin (decisions.md section 7).
    const keys = { SERVICE_API_KEYS: "key_aaaaaaaaaaaaaaaa=proj_a" }
    expect((await settingsFrom(keys)).loopbackHostsOnly).toBe(false)
    expect((await settingsFrom({ ...keys, SERVICE_HOST: "0.0.0.0" })).loopbackHostsOnly).toBe(false)
    expect((await settingsFrom({ ...keys, SERVICE_HOST: "127.0.0.1" })).loopbackHostsOnly).toBe(true)
    expect((await settingsFrom({ ...keys, SERVICE_HOST: "::1" })).loopbackHostsOnly).toBe(true)
    expect((await settingsFrom({ SERVICE_HOST: "0.0.0.0" })).loopbackHostsOnly).toBe(false)
    expect(["localhost:1", "127.0.0.1", "[::1]:8080", "127.3.4.5:9"].every(isLoopbackHost)).toBe(true)
    expect(["example.com", "localhost.evil.com:80"].some(isLoopbackHost)).toBe(false)
  })
})
