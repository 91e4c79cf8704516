/**
 * The client covers the contract: every `/v1` endpoint of `http/api/Api.ts` (the subscription,
 * trigger-event and recovery groups of `http/api/SubscriptionsApi.ts` included) has a method on both clients, and
 * each method sends the method and path its endpoint declares. A route added to the contract
 * without a client method fails here. The page schemas the client rebuilds from the contract's
 * item schemas are checked, at compile time, to be the contract's own types.
 */
import type { Effect } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"
import {
  type Client,
  type ConnectionPage,
  createClient,
  type DeliveryPage,
  type Fetch,
  makeServiceClient,
  type ServiceClientShape,
  type WebhookPage
} from "../../client/index.ts"
import { Api } from "../../http/api/Api.ts"
import type { ConnectionsApi } from "../../http/api/ConnectionsApi.ts"
import type { WebhooksApi } from "../../http/api/WebhooksApi.ts"

type AnyClient = ServiceClientShape | Client
type Call = (client: AnyClient) => Effect.Effect<unknown, unknown> | Promise<unknown>

/** `group.endpoint` of the contract → the client method that calls it (ids are all "ID"). */
const methods: Record<string, Call> = {
  "system.me": (c) => c.me(),
  "files.stage": (c) => c.files.create({ name: "a", content: "" }),
  "files.list": (c) => c.files.list(),
  "files.get": (c) => c.files.get("ID"),
  "connections.create": (c) => c.connections.create({ toolkit: "github", authClass: "none", credentials: {} }),
  "connections.list": (c) => c.connections.list(),
  "connections.get": (c) => c.connections.get("ID"),
  "connections.delete": (c) => c.connections.delete("ID"),
  "executions.execute": (c) => c.executions.execute({ tool: "demo.echo" }),
  "executions.list": (c) => c.executions.list(),
  "executions.get": (c) => c.executions.get("ID"),
  "executions.cancel": (c) => c.executions.cancel("ID"),
  "webhooks.create": (c) => c.webhooks.create({ url: "https://x", events: ["trigger.*"] }),
  "webhooks.list": (c) => c.webhooks.list(),
  "webhooks.get": (c) => c.webhooks.get("ID"),
  "webhooks.update": (c) => c.webhooks.update("ID", { active: false }),
  "webhooks.rotateSecret": (c) => c.webhooks.rotateSecret("ID"),
  "webhooks.remove": (c) => c.webhooks.delete("ID"),
  "webhooks.deliveries": (c) => c.webhooks.listDeliveries("ID"),
  // Declared ahead of the server in http/api/SubscriptionsApi.ts, served since.
  "subscriptions.create": (c) => c.subscriptions.create({ trigger: "demo.event", webhookEndpointIds: ["whe_1"] }),
  "subscriptions.list": (c) => c.subscriptions.list(),
  "subscriptions.get": (c) => c.subscriptions.get("ID"),
  "subscriptions.rotateSecret": (c) => c.subscriptions.rotateSecret("ID"),
  "subscriptions.remove": (c) => c.subscriptions.delete("ID"),
  "triggerEvents.list": (c) => c.triggerEvents.list(),
  "webhookRecovery.resend": (c) => c.webhooks.resendDelivery("ID", "ID"),
  "webhookRecovery.recover": (c) => c.webhooks.recover("ID", { since: "2026-01-01T00:00:00Z" })
}

interface Route {
  readonly name: string
  readonly method: string
  readonly path: string
}

const routesOf = (groups: Iterable<{ readonly identifier: string; readonly endpoints: Record<string, { readonly method: string; readonly path: string }> }>) =>
  [...groups].flatMap((group) =>
    Object.entries(group.endpoints).map(([name, endpoint]): Route => ({ name: `${group.identifier}.${name}`, method: endpoint.method, path: endpoint.path }))
  )

const served = routesOf(Object.values(Api.groups)).filter((route) => route.path.startsWith("/v1/"))

/** Records the one request a call makes, and fails it (500) so nothing is decoded or retried. */
const recorder = () => {
  const sent: Array<{ method: string; path: string }> = []
  const fetch: Fetch = async (input, init) => {
    sent.push({ method: init.method ?? "GET", path: new URL(input).pathname })
    return new Response(null, { status: 500 })
  }
  return { sent, fetch }
}

describe("the client covers the contract", () => {
  it("has a method for every /v1 route the server declares", () => {
    expect(served.length).toBeGreaterThan(0)
    expect(Object.keys(methods).toSorted()).toEqual(served.map((route) => route.name).toSorted())
    expect(served.map((route) => route.name)).toContain("subscriptions.create")
  })

  it.each(served)("$name: both clients send $method $path", async (route) => {
    const call = methods[route.name]
    expect(call).toBeDefined()
    if (call === undefined) return
    const expected = { method: route.method, path: route.path.replace(/:[A-Za-z]+/g, "ID") }

    const promise = recorder()
    await expect(call(createClient({ baseUrl: "https://service.example", apiKey: "k", fetch: promise.fetch }))).rejects.toMatchObject({ status: 500 })
    expect(promise.sent).toEqual([expected])

    const effect = recorder()
    const { Effect } = await import("effect")
    const result = call(makeServiceClient({ baseUrl: "https://service.example", apiKey: "k", fetch: effect.fetch }))
    expect(Effect.isEffect(result)).toBe(true)
    if (Effect.isEffect(result)) await expect(Effect.runPromise(Effect.flip(result))).resolves.toMatchObject({ status: 500 })
    expect(effect.sent).toEqual([expected])
  })

  it("pages rebuilt from the contract's item schemas are the contract's types", () => {
    expectTypeOf<WebhookPage>().toEqualTypeOf<(typeof WebhooksApi)["endpoints"]["list"]["~Success"]["Type"]>()
    expectTypeOf<DeliveryPage>().toEqualTypeOf<(typeof WebhooksApi)["endpoints"]["deliveries"]["~Success"]["Type"]>()
    expectTypeOf<ConnectionPage>().toEqualTypeOf<(typeof ConnectionsApi)["endpoints"]["list"]["~Success"]["Type"]>()
  })
})
