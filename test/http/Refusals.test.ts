/**
 * A refusal names what would have been accepted (issue "The first hour"): an unknown tool names
 * the catalog's tools, an unknown toolkit its toolkits.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { listToolkits, listTools } from "../../domain/catalog/index.ts"
import { type InProcessService, startService } from "../support/Service.ts"

describe("refusals that name the valid choices", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService()
  })
  afterAll(() => service.close())

  const messageOf = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message

  it("an unknown tool names every tool of the catalog", async () => {
    const response = await service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echoo", userId: "u1" } })
    expect(response.status).toBe(422)
    const message = await messageOf(response)
    expect(message).toContain('"demo.echoo"')
    for (const tool of listTools()) expect(message).toContain(tool.name)
  })

  it("an unknown toolkit names every toolkit", async () => {
    const response = await service.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "u1", toolkit: "slak", authClass: "bearer", credentials: { token: "t" } }
    })
    expect(response.status).toBe(422)
    const message = await messageOf(response)
    for (const toolkit of listToolkits()) expect(message).toContain(toolkit.name)
  })
})
