import { describe, expect, it } from "vitest"
import * as Registry from "../../../domain/webhooks/EndpointRegistry.ts"
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
    expect(Endpoint.subscriptionProblem("trigger.github__issue_opened")).toMatch(/unknown trigger/)
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
    const afterUpdate = given([createdEvent]).when({ type: "UpdateEndpoint", projectId: created.projectId, changes: { active: false }, at: "t1" }).then([updated])
    expect(afterUpdate).toMatchObject({ active: false, url: created.url, updatedAt: "t1" })
    const rotated: Endpoint.EndpointEvent = { type: "EndpointSecretRotated", sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" }
    const afterRotation = given([createdEvent, updated])
      .when({ type: "RotateEndpointSecret", projectId: created.projectId, sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" })
      .then([rotated])
    expect(afterRotation).toMatchObject({ sealedSecret: "s2", secretPrefix: "whsec_zzzz" })
    const deleted: Endpoint.EndpointEvent = { type: "EndpointDeleted", at: "t3" }
    given([createdEvent, updated, rotated]).when({ type: "DeleteEndpoint", projectId: created.projectId, at: "t3" }).then([deleted])
    given([createdEvent, updated, rotated, deleted]).when({ type: "DeleteEndpoint", projectId: created.projectId, at: "t4" }).thenFails({ _tag: "EndpointNotFound" })
    given([]).when({ type: "UpdateEndpoint", projectId: created.projectId, changes: { active: true }, at: "t4" }).thenFails({ _tag: "EndpointNotFound" })
  })
  it("is not found by another project, whatever the command", () => {
    for (const command of [
      { type: "UpdateEndpoint", projectId: "proj_other", changes: { active: false }, at: "t1" },
      { type: "RotateEndpointSecret", projectId: "proj_other", sealedSecret: "s2", secretPrefix: "whsec_zzzz", at: "t2" },
      { type: "DeleteEndpoint", projectId: "proj_other", at: "t3" }
    ] as const) {
      given([createdEvent]).when(command).thenFails({ _tag: "EndpointNotFound" })
    }
  })
  it("normalizes URLs", () => {
    expect(Endpoint.normalizeUrl(new URL("HTTPS://LocalHost:443/Hook/Path#frag"))).toBe("https://localhost/Hook/Path")
    expect(Endpoint.normalizeUrl(new URL("https://Example.COM:8443/a?b=1"))).toBe("https://example.com:8443/a?b=1")
  })
})

describe("endpoint registry", () => {
  const given = deciderSpecification({ decide: Registry.decide, evolve: Registry.evolve, initialState: undefined as Registry.RegistryState })
  const register = (endpointId: string, existing: ReadonlyArray<string> = []) => ({ type: "Register", endpointId, cap: 2, existing } as const)

  it("registers up to the cap, then refuses; an unregistered place can be taken again", () => {
    given([]).when(register("whe_1")).then([{ type: "EndpointRegistered", endpointId: "whe_1" }])
    const full = [{ type: "EndpointRegistered", endpointId: "whe_1" }, { type: "EndpointRegistered", endpointId: "whe_2" }] as const
    given(full).when(register("whe_3")).thenFails({ _tag: "EndpointLimitReached", cap: 2 })
    given([...full, { type: "EndpointUnregistered", endpointId: "whe_1" }]).when(register("whe_3")).then([{ type: "EndpointRegistered", endpointId: "whe_3" }])
    given(full).when({ type: "Unregister", endpointId: "whe_9" }).thenNothingHappened()
  })

  it("counts the endpoints a project had before its registry existed", () => {
    given([]).when(register("whe_3", ["whe_1", "whe_2"])).thenFails({ _tag: "EndpointLimitReached", cap: 2 })
    const seeded = given([]).when(register("whe_2", ["whe_1"])).then([{ type: "EndpointRegistered", endpointId: "whe_2", existing: ["whe_1"] }])
    expect([...(seeded ?? [])].toSorted()).toEqual(["whe_1", "whe_2"])
  })
})

describe("switch-offs", () => {
  const update = (active: boolean | undefined, at: string): Endpoint.EndpointEvent => ({ type: "EndpointUpdated", ...(active !== undefined ? { active } : {}), at })
  it("stop every delivery queued at or before one of them, however often the endpoint was switched on since", () => {
    const events = [update(undefined, "2026-01-01T00:00:01Z"), update(false, "2026-01-01T00:00:05Z"), update(true, "2026-01-01T00:00:06Z"), update(false, "2026-01-01T00:00:09Z"), update(true, "2026-01-01T00:00:10Z")]
    const off = Endpoint.deactivations(events)
    expect(off).toEqual(["2026-01-01T00:00:05Z", "2026-01-01T00:00:09Z"])
    expect(Endpoint.stoppedBySwitchOff(off, "2026-01-01T00:00:04.999Z")).toBe(true)
    expect(Endpoint.stoppedBySwitchOff(off, "2026-01-01T00:00:07Z")).toBe(true)
    expect(Endpoint.stoppedBySwitchOff(off, "2026-01-01T00:00:09.001Z")).toBe(false)
    expect(Endpoint.stoppedBySwitchOff([], "2026-01-01T00:00:00Z")).toBe(false)
  })
})
