import { describe, expect, it } from "vitest"
import * as Endpoint from "../../../domain/webhooks/WebhookEndpoint.ts"
import { deciderSpecification } from "../../support/Decider.ts"

const created = {
  endpointId: "whe_1",
  projectId: "proj_1",
  url: "https://example.com/hook",
  events: ["execution.completed"],
  active: true,
  sealedSecret: "sealed",
  secretPrefix: "whsec_abcd",
  at: "t0"
}

describe("subscriptions", () => {
  it("execution.completed selects every terminal outcome; exact types only themselves", () => {
    for (const type of ["execution.succeeded", "execution.failed", "execution.cancelled"]) {
      expect(Endpoint.subscribes(["execution.completed"], type)).toBe(true)
    }
    expect(Endpoint.subscribes(["execution.failed"], "execution.failed")).toBe(true)
    expect(Endpoint.subscribes(["execution.failed"], "execution.succeeded")).toBe(false)
    expect(Endpoint.subscribes(["trigger.*"], "trigger.github.issue_opened")).toBe(true)
    expect(Endpoint.subscribes(["trigger.*"], "execution.failed")).toBe(false)
    expect(Endpoint.subscribes(["voice.session.event"], "voice.transcript.ready")).toBe(false)
  })
  it("validates entries against the list and the catalog", () => {
    expect(Endpoint.subscriptionProblem("trigger.github.issue_opened")).toBeUndefined()
    expect(Endpoint.subscriptionProblem("trigger.github.nothing")).toMatch(/unknown trigger/)
    expect(Endpoint.subscriptionProblem("execution.completed")).toBeUndefined()
    expect(Endpoint.subscriptionProblem("execution.running")).toMatch(/unknown event type/)
  })
})

describe("endpoint", () => {
  const initialState: Endpoint.EndpointState = undefined
  const given = deciderSpecification({ decide: Endpoint.decide, evolve: Endpoint.evolve, initialState })
  const createdEvent: Endpoint.EndpointEvent = { type: "EndpointCreated", ...created }

  it("is created once", () => {
    given([createdEvent]).when({ type: "CreateEndpoint", endpoint: created }).thenFails({ _tag: "EndpointExists" })
  })
  it("applies updates, rotations and deletion; a deleted endpoint refuses everything", () => {
    const updated: Endpoint.EndpointEvent = { type: "EndpointUpdated", active: false, at: "t1" }
    const afterUpdate = given([createdEvent]).when({ type: "UpdateEndpoint", changes: { active: false }, at: "t1" }).then([updated])
    expect(afterUpdate).toMatchObject({ active: false, url: created.url, updatedAt: "t1" })
    const rotated: Endpoint.EndpointEvent = { type: "EndpointSecretRotated", sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" }
    const afterRotation = given([createdEvent, updated])
      .when({ type: "RotateEndpointSecret", sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" })
      .then([rotated])
    expect(afterRotation).toMatchObject({ sealedSecret: "s2", secretPrefix: "whsec_zzzz" })
    const deleted: Endpoint.EndpointEvent = { type: "EndpointDeleted", at: "t3" }
    given([createdEvent, updated, rotated]).when({ type: "DeleteEndpoint", at: "t3" }).then([deleted])
    given([createdEvent, updated, rotated, deleted]).when({ type: "DeleteEndpoint", at: "t4" }).thenFails({ _tag: "EndpointNotFound" })
    given([]).when({ type: "UpdateEndpoint", changes: { active: true }, at: "t4" }).thenFails({ _tag: "EndpointNotFound" })
  })
  it("normalizes URLs", () => {
    expect(Endpoint.normalizeUrl(new URL("HTTPS://LocalHost:443/Hook/Path#frag"))).toBe("https://localhost/Hook/Path")
    expect(Endpoint.normalizeUrl(new URL("https://Example.COM:8443/a?b=1"))).toBe("https://example.com:8443/a?b=1")
  })
})
