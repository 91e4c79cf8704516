/**
 * An outside client: the MCP Inspector's command line (`npx @modelcontextprotocol/inspector
 * --cli`, pinned in devDependencies) lists the gateway's tools, calls demo.echo and prints the
 * result, over Streamable HTTP with the bearer key as a header.
 */
import { spawn } from "node:child_process"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { type GatewayUnderTest, startGateway } from "./support/Gateway.ts"

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..")
const BIN = join(ROOT, "node_modules", ".bin")

/** Runs the Inspector CLI against `url`; answers its exit code and what it printed. */
const inspector = (url: string, args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((resolve, reject) => {
    const child = spawn(
      "npx",
      ["--no-install", "@modelcontextprotocol/inspector", "--cli", url, "--transport", "http", "--header", `Authorization: Bearer ${KEY}`, "--header", "X-Service-User-Id: user_1", ...args],
      // node_modules/.bin first: the CLI starts `node`, which must be the pinned Node 24.
      { cwd: ROOT, env: { ...process.env, PATH: `${BIN}:${process.env.PATH ?? ""}` }, stdio: ["ignore", "pipe", "pipe"] }
    )
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => void (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => void (stderr += chunk.toString()))
    child.once("error", reject)
    child.once("exit", (code) => resolve({ code, stdout, stderr }))
  })

describe("the MCP Inspector CLI as an outside client", () => {
  let gw: GatewayUnderTest
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw.close())

  it("lists the tools", async () => {
    const run = await inspector(gw.url, ["--method", "tools/list"])
    expect(run.code, run.stderr).toBe(0)
    const listed = JSON.parse(run.stdout) as { tools: Array<{ name: string }> }
    expect(listed.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(["service.search_tools", "service.execute_tool", "demo.echo"]))
  }, 60_000)

  it("calls demo.echo and reads the result", async () => {
    const run = await inspector(gw.url, ["--method", "tools/call", "--tool-name", "demo.echo", "--tool-arg", "greeting=hello", "count=3"])
    expect(run.code, run.stderr).toBe(0)
    const result = JSON.parse(run.stdout) as { structuredContent: unknown; content: Array<{ text: string }>; _meta: Record<string, { status: string }> }
    expect(result.structuredContent).toEqual({ greeting: "hello", count: 3 })
    expect(JSON.parse(result.content[0]!.text)).toEqual({ greeting: "hello", count: 3 })
    expect(result._meta["dev.service/execution"]?.status).toBe("succeeded")
  }, 60_000)
})
