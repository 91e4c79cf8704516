/**
 * Writes that arrive together on one resource all land: each endpoint and subscription is an
 * actor that takes its commands one at a time. On Postgres, 20 rotate-secrets of one endpoint at
 * once answered 11 retryable 500s (a version race lost eight times over), as did concurrent
 * PATCHes, subscription rotations and creations of endpoints in one project (outside audit).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, startServiceOn } from "../support/Service.ts"

const TIMES = 20

describe.each(["memory", "postgres"] as const)("concurrent writes to one resource (%s)", (mode) => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startServiceOn(mode, "concurrent_writes", { SERVICE_RATE_LIMIT_REQUEST_BURST: "100000" })
  }, 60_000)
  afterAll(() => service?.close())

  const createEndpoint = async (events: ReadonlyArray<string>) => {
    const response = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/hook", events } })
    expect(response.status).toBe(201)
    return ((await response.json()) as { endpointId: string }).endpointId
  }

  const statuses = async (send: () => Promise<Response>) =>
    (await Promise.all(Array.from({ length: TIMES }, async () => {
      const response = await send()
      await response.arrayBuffer()
      return response.status
    })))

  it("rotating one endpoint's secret 20 times at once: 20 answers 200, and the last secret is the one kept", async () => {
    const endpointId = await createEndpoint(["execution.succeeded"])
    const answers = await Promise.all(Array.from({ length: TIMES }, () => service.fetch(`/v1/webhooks/${endpointId}/rotate-secret`, { method: "POST" })))
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: TIMES }, () => 200))
    const prefixes = await Promise.all(answers.map(async (answer) => ((await answer.json()) as { secretPrefix: string }).secretPrefix))
    const kept = ((await (await service.fetch(`/v1/webhooks/${endpointId}`)).json()) as { secretPrefix: string }).secretPrefix
    expect(prefixes).toContain(kept)
  })

  it("patching one endpoint 20 times at once: 20 answers 200", async () => {
    const endpointId = await createEndpoint(["execution.succeeded"])
    const answered = await statuses(() => service.fetch(`/v1/webhooks/${endpointId}`, { method: "PATCH", json: { active: Math.random() < 0.5 } }))
    expect(answered).toEqual(Array.from({ length: TIMES }, () => 200))
  })

  it("creating 20 endpoints in one project at once: 20 answers 201, and all 20 are listed", async () => {
    const before = ((await (await service.fetch("/v1/webhooks")).json()) as { webhooks: ReadonlyArray<unknown> }).webhooks.length
    const answered = await statuses(() => service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/many", events: ["execution.failed"] } }))
    expect(answered).toEqual(Array.from({ length: TIMES }, () => 201))
    const after = ((await (await service.fetch("/v1/webhooks")).json()) as { webhooks: ReadonlyArray<unknown> }).webhooks.length
    expect(after).toBe(before + TIMES)
  })

  it("rotating one subscription's ingest secret 20 times at once: 20 answers 200", async () => {
    const endpointId = await createEndpoint(["trigger.demo.event"])
    const created = await service.fetch("/v1/subscriptions", { method: "POST", json: { trigger: "demo.event", userId: "user_1", webhookEndpointIds: [endpointId] } })
    expect(created.status).toBe(201)
    const { subscriptionId } = (await created.json()) as { subscriptionId: string }
    const answered = await statuses(() => service.fetch(`/v1/subscriptions/${subscriptionId}/rotate-secret`, { method: "POST" }))
    expect(answered).toEqual(Array.from({ length: TIMES }, () => 200))
  })

  // On Postgres, 8 at once with one key under demo's cap of 4 answered 200 four times and 429 four
  // times, one execution in all: each took a permit before its claim was known (outside audit).
  it.each([
    ["demo.sleep", { ms: 300 }],
    ["demo.echo", { hello: "world" }]
  ])("%s sent sync 8 times at once with one idempotency key: 8 answers 200 with the one execution", async (tool, input) => {
    const idempotencyKey = `together-${tool}-${Date.now()}`
    const answers = await Promise.all(Array.from({ length: 8 }, async () => {
      const response = await service.fetch("/v1/execute", { method: "POST", json: { tool, userId: "user_1", input, idempotencyKey } })
      return { status: response.status, body: (await response.json()) as { executionId?: string } }
    }))
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: 8 }, () => 200))
    expect(new Set(answers.map((answer) => answer.body.executionId)).size).toBe(1)
  })
})
