/**
 * A project's endpoints are capped (issue "Hardening", finding 6): past
 * SERVICE_WEBHOOK_MAX_ENDPOINTS_PER_PROJECT a create is 422, concurrent creates never pass the
 * cap, a deleted endpoint frees its place, and another project is not affected. An unknown event
 * type is refused with the valid ones named.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, OTHER_KEY, startService } from "../support/Service.ts"

const CAP = 5

const create = (service: InProcessService, key?: string) =>
  service.fetch("/v1/webhooks", {
    method: "POST",
    json: { url: "https://hooks.example.com/in", events: ["execution.completed"] },
    ...(key === undefined ? {} : { key })
  })

describe.each(["memory", "postgres"] as const)("webhook endpoints per project (%s)", (mode) => {
  let service: InProcessService
  let database: string | undefined
  beforeAll(async () => {
    if (mode === "postgres" && postgresAvailable) database = await createTestDatabase("whlimit")
    service = await startService({
      SERVICE_WEBHOOK_MAX_ENDPOINTS_PER_PROJECT: String(CAP),
      ...(database === undefined ? {} : { SERVICE_DATABASE_URL: database, SERVICE_SECRET_KEY: Buffer.alloc(32, 5).toString("base64") })
    })
  }, 60_000)
  afterAll(async () => {
    await service?.close()
    if (database !== undefined) await dropTestDatabase(database)
  })

  it("twelve concurrent creates make exactly the cap; the rest are 422; a delete frees a place", async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => create(service)))
    const statuses = answers.map((answer) => answer.status)
    expect(statuses.filter((status) => status === 201)).toHaveLength(CAP)
    expect(statuses.filter((status) => status === 422)).toHaveLength(12 - CAP)
    const refused = answers.find((answer) => answer.status === 422)!
    const error = ((await refused.json()) as { error: { code: string; message: string } }).error
    expect(error).toMatchObject({ code: "invalid_input" })
    expect(error.message).toContain(`at most ${CAP}`)
    const listed = (await (await service.fetch("/v1/webhooks")).json()) as { webhooks: ReadonlyArray<{ endpointId: string }> }
    expect(listed.webhooks).toHaveLength(CAP)

    // Another project has places of its own.
    expect((await create(service, OTHER_KEY)).status).toBe(201)

    expect((await service.fetch(`/v1/webhooks/${listed.webhooks[0]!.endpointId}`, { method: "DELETE" })).status).toBe(204)
    expect((await create(service)).status).toBe(201)
    expect((await create(service)).status).toBe(422)
  })

  it("an unknown event type or trigger is refused naming the valid ones", async () => {
    const unknownType = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://hooks.example.com/x", events: ["execution.done"] } })
    expect(unknownType.status).toBe(422)
    const message = ((await unknownType.json()) as { error: { message: string } }).error.message
    expect(message).toContain("execution.completed")
    expect(message).toContain("trigger.*")
    const unknownTrigger = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://hooks.example.com/x", events: ["trigger.demo.nope"] } })
    expect(unknownTrigger.status).toBe(422)
    expect(((await unknownTrigger.json()) as { error: { message: string } }).error.message).toContain("trigger.demo.event")
  })

  // In another project than the tests above, whose endpoints fill this one's cap.
  it("a trigger is named in its canonical dotted form only: the wire form (`trigger.demo__event`) is refused on create and patch", async () => {
    // Events are delivered as `trigger.<toolkit>.<name>`: an entry in another spelling would
    // match none of them, and a subscription naming the endpoint would be refused later.
    for (const entry of ["trigger.demo__event", "trigger.slack__message_posted"]) {
      const created = await service.fetch("/v1/webhooks", { method: "POST", key: OTHER_KEY, json: { url: "https://hooks.example.com/x", events: [entry] } })
      expect(created.status).toBe(422)
      expect(((await created.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: "invalid_input", message: expect.stringContaining("trigger.demo.event") })
    }
    const created = await service.fetch("/v1/webhooks", { method: "POST", key: OTHER_KEY, json: { url: "https://hooks.example.com/x", events: ["trigger.demo.event"] } })
    expect(created.status).toBe(201)
    const { endpointId } = (await created.json()) as { endpointId: string }
    const patched = await service.fetch(`/v1/webhooks/${endpointId}`, { method: "PATCH", key: OTHER_KEY, json: { events: ["trigger.github__issue_opened"] } })
    expect(patched.status).toBe(422)
    expect(((await (await service.fetch(`/v1/webhooks/${endpointId}`, { key: OTHER_KEY })).json()) as { events: Array<string> }).events).toEqual(["trigger.demo.event"])
  })
})
