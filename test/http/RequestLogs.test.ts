/**
 * What a request logs goes through the loggers and the minimum level the service was started
 * with (the command line's `--log-level`), although requests run in a context pruned to the
 * services they need (http/Server.ts). The fault: a view table dropped behind the service's back,
 * so listing executions meets an unexpected store failure, answered 500 and logged.
 */
import { Layer, Logger, References } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../support/Database.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import { ROOMY, SECRET_KEY } from "./support/Executions.ts"

interface Logged {
  readonly message: unknown
  readonly level: string
  readonly annotations: Readonly<Record<string, unknown>>
}

const collector = (into: Array<Logged>) =>
  Logger.layer([Logger.make((options) =>
    void into.push({
      message: options.message,
      level: options.logLevel,
      annotations: options.fiber.getRef(References.CurrentLogAnnotations)
    })
  )])

const messages = (logged: ReadonlyArray<Logged>) => logged.flatMap((entry) => (Array.isArray(entry.message) ? entry.message : [entry.message]))

describe.skipIf(!postgresAvailable)("request logs", () => {
  const started: Array<{ service: InProcessService; url: string }> = []

  /** A service on a database of its own whose executions view has been dropped. */
  const broken = async (around: Layer.Layer<never>) => {
    const url = await createTestDatabase("logs")
    const service = await startService({ ...ROOMY, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }, around)
    started.push({ service, url })
    const tables = await runSql<{ name: string }>(url, "SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'v\\_executions%'")
    expect(tables.length).toBeGreaterThan(0)
    for (const { name } of tables) await runSql(url, `DROP TABLE "${name}"`)
    return service
  }

  afterAll(async () => {
    for (const { service, url } of started) {
      await service.close()
      await dropTestDatabase(url)
    }
  })

  it("an unexpected failure is answered 500 and logged through the service's loggers, with its request id", async () => {
    const logged: Array<Logged> = []
    const service = await broken(collector(logged))
    const response = await service.fetch("/v1/executions?userId=u1")
    expect(response.status).toBe(500)
    const body = (await response.json()) as { requestId: string }
    expect(body.requestId).toBe(response.headers.get("request-id"))
    const failures = logged.filter((entry) => messages([entry]).includes("unhandled failure"))
    expect(failures).toHaveLength(1)
    expect(failures[0]?.level).toBe("Error")
    expect(failures[0]?.annotations.requestId).toBe(body.requestId)
  })

  // With the test above (the loggers reach requests), this one shows the level reaches them too.
  it("the minimum log level the service was started with holds for requests too", async () => {
    const logged: Array<Logged> = []
    const service = await broken(Layer.mergeAll(collector(logged), Layer.succeed(References.MinimumLogLevel, "None")))
    const response = await service.fetch("/v1/executions?userId=u1")
    expect(response.status).toBe(500)
    expect(messages(logged)).not.toContain("unhandled failure")
  })
})

// operations.md, "Logs": a client that goes away before its answer is logged with nginx's 499,
// at info, not as an unhandled failure answered 500.
describe("a client that goes away", () => {
  let service: InProcessService | undefined
  afterAll(() => service?.close())

  it("is counted and logged as 499, with no error line", async () => {
    const logged: Array<Logged> = []
    service = await startService({ ...ROOMY }, collector(logged))
    const controller = new AbortController()
    const pending = service.fetch("/v1/execute", {
      method: "POST",
      json: { tool: "demo.sleep", userId: "u1", input: { ms: 1_500 } },
      signal: controller.signal
    }).catch(() => undefined)
    await new Promise((resolve) => setTimeout(resolve, 300))
    controller.abort()
    await pending
    // The request's line and its metric carry the same status; the metric is read here.
    const counted = async () =>
      /http_server_requests_total\{[^}]*route="\/v1\/execute"[^}]*status="499"[^}]*\} 1/.test(await (await service!.fetch("/metrics", { key: null })).text())
    const deadline = Date.now() + 5_000
    while (!(await counted()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await counted()).toBe(true)
    expect(messages(logged)).not.toContain("unhandled failure")
  })
})
