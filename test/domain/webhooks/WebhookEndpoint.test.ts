import { describe, expect, it } from "vitest"
import * as Endpoint from "../../../domain/webhooks/WebhookEndpoint.ts"

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
  it("is created once", () => {
    const state = Endpoint.fold([{ type: "EndpointCreated", ...created }])
    expect(Endpoint.decide({ type: "CreateEndpoint", endpoint: created }, state)).toEqual({ _tag: "EndpointExists" })
  })
  it("applies updates, rotations and deletion; a deleted endpoint refuses everything", () => {
    let state = Endpoint.fold([{ type: "EndpointCreated", ...created }])
    const updated = Endpoint.decide({ type: "UpdateEndpoint", changes: { active: false }, at: "t1" }, state)
    expect(Array.isArray(updated)).toBe(true)
    state = (updated as ReadonlyArray<Endpoint.EndpointEvent>).reduce(Endpoint.evolve, state)
    expect(state).toMatchObject({ active: false, url: created.url, updatedAt: "t1" })
    const rotated = Endpoint.decide({ type: "RotateEndpointSecret", sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" }, state)
    state = (rotated as ReadonlyArray<Endpoint.EndpointEvent>).reduce(Endpoint.evolve, state)
    expect(state).toMatchObject({ sealedSecret: "s2", secretPrefix: "whsec_zzzz" })
    const deleted = Endpoint.decide({ type: "DeleteEndpoint", at: "t3" }, state)
    state = (deleted as ReadonlyArray<Endpoint.EndpointEvent>).reduce(Endpoint.evolve, state)
    expect(Endpoint.decide({ type: "DeleteEndpoint", at: "t4" }, state)).toEqual({ _tag: "EndpointNotFound" })
    expect(Endpoint.decide({ type: "UpdateEndpoint", changes: { active: true }, at: "t4" }, undefined)).toEqual({ _tag: "EndpointNotFound" })
  })
  it("normalizes URLs", () => {
    expect(Endpoint.normalizeUrl(new URL("HTTPS://LocalHost:443/Hook/Path#frag"))).toBe("https://localhost/Hook/Path")
    expect(Endpoint.normalizeUrl(new URL("https://Example.COM:8443/a?b=1"))).toBe("https://example.com:8443/a?b=1")
  })
})
