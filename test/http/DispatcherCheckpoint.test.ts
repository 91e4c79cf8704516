/**
 * The webhook dispatcher's checkpoint catches up once the log is quiet: the saves are at most one
 * a second, and the last batch before a pause used to stay unsaved, so /metrics and /readyz
 * reported the dispatcher behind by those events for as long as nothing new was appended.
 */
import { afterAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type ChildService, startProcess } from "../support/Service.ts"
import { eventually, makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, freePort, keyOf, serviceEnv } from "../support/Webhooks.ts"

describe.skipIf(!postgresAvailable)("the dispatcher's lag when the log is quiet (Postgres)", () => {
  let url: string | undefined
  let receiver: Receiver | undefined
  let service: ChildService | undefined

  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("reaches 0 once the last events are dispatched, without further appends", async () => {
    url = await createTestDatabase("dispatch_checkpoint")
    const certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    service = await startProcess(serviceEnv(url, certificate), await freePort())
    const endpoint = await createEndpoint(service, "p1", receiver.url("/hook"))
    for (let i = 0; i < 3; i++) {
      const answer = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p1"), json: { tool: "demo.echo", userId: "u1", input: { i } } })
      expect(answer.status).toBe(200)
    }
    await eventually(async () => (await deliveriesOf(service!, "p1", endpoint.endpointId)).filter((d) => d.status === "succeeded").length === 3 || undefined)
    const lagOf = async () => {
      const text = await (await service!.fetch("/metrics", { key: null })).text()
      return Number(/^projection_lag_events_by_follower\{follower="webhook_dispatcher"\} (\d+)$/m.exec(text)?.[1] ?? "NaN")
    }
    // After a quiet second, a batch is saved at once and the ones right behind it are not:
    // executions of a project without endpoints, one after another.
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    for (let i = 0; i < 3; i++) {
      const answer = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: { i } } })
      expect(answer.status).toBe(200)
    }
    // Within a few seconds of quiet the dispatcher's checkpoint has caught up with the log.
    await eventually(async () => (await lagOf()) === 0 || undefined, 5_000, "the dispatcher's lag at 0")
    expect(await lagOf()).toBe(0)
  }, 60_000)
})
