/**
 * The dispatcher's subscription index: correct after every kind of endpoint change, one view
 * read per project until the log names a change of that project; and, on Postgres, correct when
 * the endpoints are changed through another process than the one dispatching.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ENDPOINT_STREAM_TYPE, endpointCodec, type EndpointEvent } from "../../../domain/webhooks/WebhookEndpoint.ts"
import type { RecordedEvent } from "../../../infra/eventlog/EventStore.ts"
import { memoryViewStore, MemoryTables, type ViewStoreShape } from "../../../infra/eventlog/ViewStore.ts"
import { ENDPOINTS_TABLE, webhookEndpointsProjection } from "../../../infra/webhooks/WebhookProjections.ts"
import { makeSubscriptionIndex } from "../../../infra/webhooks/WebhookSubscriptions.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"
import { appendTerminal, pgLog } from "../../support/Executions.ts"
import { type ChildService, startPeers } from "../../support/Service.ts"
import { type Certificate, eventually, makeCertificate, type Receiver, startReceiver } from "../../support/WebhookReceiver.ts"
import { createEndpoint, deliveriesOf, keyOf, serviceEnv } from "../../support/Webhooks.ts"

describe("subscription index", () => {
  const tables = new MemoryTables(new Map([[ENDPOINTS_TABLE, ["endpoint_id"]]]))
  let reads = 0
  const base = memoryViewStore(tables)
  const views: ViewStoreShape = { ...base, list: (table, query) => Effect.suspend(() => (reads++, base.list(table, query))) }
  let seq = 0
  /** Records an endpoint event the way the log does: the view row commits with it. */
  const record = (endpointId: string, data: EndpointEvent): RecordedEvent => {
    seq++
    const event: RecordedEvent = {
      streamId: `${ENDPOINT_STREAM_TYPE}-${endpointId}`,
      streamType: ENDPOINT_STREAM_TYPE,
      version: 1,
      position: { tx: BigInt(seq), seq: BigInt(seq) },
      ...endpointCodec.encode(data, `evt_${seq}`),
      metadata: {},
      createdAt: Date.now()
    }
    tables.apply(webhookEndpointsProjection.project(event))
    return event
  }
  const created = (endpointId: string, projectId: string, events: ReadonlyArray<string>, active = true): EndpointEvent => ({
    type: "EndpointCreated",
    endpointId,
    projectId,
    url: `https://example.com/${endpointId}`,
    events,
    active,
    sealedSecret: "sealed",
    secretPrefix: "whsec_abcd",
    at: new Date().toISOString()
  })
  const at = new Date().toISOString()

  it("follows create, patch, deactivate, reactivate, rotate and delete", async () => {
    const index = makeSubscriptionIndex(views)
    const ids = (projectId: string, type: string) =>
      Effect.runPromise(index.subscribers(projectId, type)).then((rows) => rows.map((row) => row.endpointId))
    reads = 0
    // A project without endpoints: one read, then cached.
    expect(await ids("proj_a", "execution.succeeded")).toEqual([])
    expect(await ids("proj_a", "execution.failed")).toEqual([])
    expect(reads).toBe(1)

    index.observe(record("whe_1", created("whe_1", "proj_a", ["execution.completed"])))
    index.observe(record("whe_2", created("whe_2", "proj_a", ["execution.failed"], false)))
    expect(await ids("proj_a", "execution.succeeded")).toEqual(["whe_1"])
    expect(await ids("proj_a", "execution.failed")).toEqual(["whe_1"])
    expect(reads).toBe(2)

    index.observe(record("whe_2", { type: "EndpointUpdated", active: true, at }))
    expect(await ids("proj_a", "execution.failed")).toEqual(["whe_1", "whe_2"])
    index.observe(record("whe_1", { type: "EndpointUpdated", events: ["execution.cancelled"], at }))
    expect(await ids("proj_a", "execution.succeeded")).toEqual([])
    expect(await ids("proj_a", "execution.cancelled")).toEqual(["whe_1"])
    index.observe(record("whe_2", { type: "EndpointUpdated", active: false, at }))
    expect(await ids("proj_a", "execution.failed")).toEqual([])
    const readsBefore = reads
    index.observe(record("whe_1", { type: "EndpointSecretRotated", sealedSecret: "sealed2", secretPrefix: "whsec_efgh", at }))
    expect(await ids("proj_a", "execution.cancelled")).toEqual(["whe_1"])
    expect(reads).toBe(readsBefore + 1)
    index.observe(record("whe_1", { type: "EndpointDeleted", at }))
    expect(await ids("proj_a", "execution.cancelled")).toEqual([])
  })

  it("drops only the changed project", async () => {
    const index = makeSubscriptionIndex(views)
    index.observe(record("whe_3", created("whe_3", "proj_b", ["execution.completed"])))
    await Effect.runPromise(index.subscribers("proj_b", "execution.succeeded"))
    await Effect.runPromise(index.subscribers("proj_c", "execution.succeeded"))
    expect(index.cachedProjects().toSorted()).toEqual(["proj_b", "proj_c"])
    index.observe(record("whe_3", { type: "EndpointUpdated", active: false, at }))
    expect(index.cachedProjects()).toEqual(["proj_c"])
    // Events of other streams change nothing.
    index.observe({ ...record("whe_4", created("whe_4", "proj_d", ["execution.completed"])), streamType: "execution", streamId: "execution-x" })
    expect(index.cachedProjects()).toEqual(["proj_c"])
  })
})

describe.skipIf(!postgresAvailable)("subscription index across processes", () => {
  let certificate: Certificate
  let receiver: Receiver
  let databaseUrl: string
  const services: Array<ChildService> = []

  beforeAll(async () => {
    certificate = makeCertificate()
    receiver = await startReceiver(certificate)
    databaseUrl = await createTestDatabase("whs")
  }, 60_000)
  afterAll(async () => {
    for (const service of services) await service.stop()
    await receiver?.close()
    if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
  })

  it("sees endpoints created, patched, deactivated and deleted through either process", async () => {
    const env = serviceEnv(databaseUrl, certificate)
    const [a, b] = await startPeers(env)
    services.push(a, b)
    const log = pgLog(databaseUrl)
    try {
      const paths = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => r.headers["service-webhook-id"])
      const control = await createEndpoint(a, "p3", receiver.url("/s/control"))
      /** Appends a terminal event and waits until the control endpoint got it: the dispatcher is past it. */
      const append = async (outcome: "succeeded" | "failed") => {
        const event = await log.runPromise(appendTerminal("proj_p3", outcome))
        await eventually(() => (paths("/s/control").includes(event.eventId) ? true : undefined), 20_000, "control delivery")
        return event.eventId
      }
      const patch = (client: ChildService, id: string, json: unknown) =>
        client.fetch(`/v1/webhooks/${id}`, { method: "PATCH", key: keyOf("p3"), json }).then((r) => expect(r.status).toBe(200))
      const eventIdsOf = async (id: string) => (await deliveriesOf(a, "p3", id)).map((d) => d.eventId).toSorted()

      // Both processes edit; whichever dispatches learns every change from the log.
      const first = await append("succeeded")
      const e1 = await createEndpoint(b, "p3", receiver.url("/s/e1"))
      const e2 = await createEndpoint(a, "p3", receiver.url("/s/e2"), ["execution.failed"])
      const second = await append("succeeded")
      const third = await append("failed")
      await patch(b, e1.endpointId, { events: ["execution.failed"] })
      await patch(a, e2.endpointId, { active: false })
      const fourth = await append("succeeded")
      const fifth = await append("failed")
      await patch(b, e2.endpointId, { active: true, url: receiver.url("/s/e2b") })
      const resp = await b.fetch(`/v1/webhooks/${e1.endpointId}`, { method: "DELETE", key: keyOf("p3") })
      expect(resp.status).toBe(204)
      const sixth = await append("failed")

      expect(await eventIdsOf(control.endpointId)).toEqual([first, second, third, fourth, fifth, sixth].toSorted())
      await eventually(() => (paths("/s/e2b").includes(sixth) ? true : undefined), 20_000, "e2 after reactivation")
      expect(paths("/s/e1")).toEqual([second, third, fifth])
      expect(paths("/s/e2")).toEqual([third])
      expect(paths("/s/e2b")).toEqual([sixth])
      expect(await eventIdsOf(e2.endpointId)).toEqual([third, sixth].toSorted())
    } finally {
      await log.dispose()
    }
  }, 120_000)
})

describe("subscription index with a large project", () => {
  it("reads every endpoint of a project, in pages, so none is left without its deliveries", async () => {
    const tables = new MemoryTables(new Map([[ENDPOINTS_TABLE, ["endpoint_id"]]]))
    const views = memoryViewStore(tables)
    for (let i = 0; i < 2_500; i++) {
      const endpointId = `whe_${String(i).padStart(5, "0")}`
      const created: EndpointEvent = {
        type: "EndpointCreated",
        endpointId,
        projectId: "proj_big",
        url: "https://example.com/hook",
        events: ["execution.completed"],
        active: true,
        sealedSecret: "sealed",
        secretPrefix: "whsec_abcd",
        at: new Date(0).toISOString()
      }
      tables.apply(webhookEndpointsProjection.project({
        streamId: `${ENDPOINT_STREAM_TYPE}-${endpointId}`,
        streamType: ENDPOINT_STREAM_TYPE,
        version: 1,
        position: { tx: BigInt(i + 1), seq: BigInt(i + 1) },
        eventId: `evt_big_${i}`,
        type: created.type,
        schemaVersion: 1,
        data: created,
        metadata: {},
        createdAt: 0
      }))
    }
    const subscribers = await Effect.runPromise(makeSubscriptionIndex(views).subscribers("proj_big", "execution.succeeded"))
    expect(subscribers).toHaveLength(2_500)
  })
})
