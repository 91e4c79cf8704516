/**
 * End to end: executions run through HTTP, and their terminal records reach subscribed
 * endpoints as signed webhooks whose envelope is the durable record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import type { InProcessService } from "../support/Service.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"

describe("executions → webhooks (memory, in process)", () => {
  let receiver: Receiver
  let service: InProcessService
  let close: () => Promise<void>

  beforeAll(async () => {
    ;({ service, receiver, close } = await startMemoryWebhookService())
  })
  afterAll(() => close())

  const execute = async (body: unknown) => {
    const response = await service.fetch("/v1/execute", { method: "POST", json: body, key: keyOf("p1") })
    return (await response.json()) as { executionId: string; status: string }
  }

  it("each subscribed endpoint gets one signed delivery per terminal execution, matching its outcome", async () => {
    const all = await createEndpoint(service, "p1", receiver.url("/all"), ["execution.completed"])
    const failedOnly = await createEndpoint(service, "p1", receiver.url("/failed"), ["execution.failed"])
    const ok = await execute({ tool: "demo.echo", input: { hello: "world" }, userId: "u1" })
    const bad = await execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "u1" })
    expect(ok.status).toBe("succeeded")
    expect(bad.status).toBe("failed")

    await eventually(async () => {
      const a = await deliveriesOf(service, "p1", all.endpointId)
      const f = await deliveriesOf(service, "p1", failedOnly.endpointId)
      return a.length === 2 && f.length === 1 && [...a, ...f].every((d) => d.status === "succeeded") ? true : undefined
    })

    const toAll = receiver.received.filter((r) => r.path === "/all")
    const toFailed = receiver.received.filter((r) => r.path === "/failed")
    expect(toAll).toHaveLength(2)
    expect(toFailed).toHaveLength(1)
    for (const request of toAll) expect(verifyWebhook(all.secret, request.headers, request.rawBody).ok).toBe(true)
    expect(verifyWebhook(failedOnly.secret, toFailed[0]!.headers, toFailed[0]!.rawBody).ok).toBe(true)

    const envelopes = toAll.map((r) => JSON.parse(r.rawBody) as { id: string; type: string; projectId: string; data: { executionId: string; status: string } })
    expect(envelopes.map((e) => e.type)).toEqual(["execution.succeeded", "execution.failed"])
    expect(envelopes.map((e) => e.data.executionId)).toEqual([ok.executionId, bad.executionId])
    expect(envelopes.every((e) => e.projectId === "proj_p1")).toBe(true)
    // The envelope's data is the public record as a GET answers it.
    const record = await (await service.fetch(`/v1/executions/${ok.executionId}`, { key: keyOf("p1") })).json()
    expect(envelopes[0]!.data).toEqual(record)
    expect(toAll[0]!.headers["service-webhook-id"]).toBe(envelopes[0]!.id)
  }, 30_000)
})
