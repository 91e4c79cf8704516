/**
 * Where a trigger event's payload is (infra/triggers/TriggerPayloads.ts): here, in another live
 * process (`elsewhere`, whose process then runs the lane), or gone (`payload_unavailable`). The
 * defect this guards against: with two processes, a peer that started after the last read of the
 * live incarnations was taken for dead, and its events failed with payload_unavailable while it
 * still held them (seen in the two-process test of TriggersDurable.test.ts, once in four runs).
 */
import { describe, expect, it } from "vitest"
import { makePayloads } from "../../../infra/triggers/TriggerPayloads.ts"

const event = { eventId: "evt_trigger_1", type: "trigger.demo.event", projectId: "proj_p1", createdAt: "2026-11-25T12:00:00.000Z", data: { n: 1 } }
const ADMITTED_AT = Date.parse(event.createdAt)

describe("trigger payloads: where an event's payload is", () => {
  it("answers the event it holds, whoever admitted it", () => {
    const payloads = makePayloads(1 << 20)
    payloads.set(event)
    expect(payloads.locate(event.eventId, "run_peer", ADMITTED_AT)).toEqual(event)
  })

  it("a payload this process admitted and no longer holds is gone", () => {
    const payloads = makePayloads(1 << 20)
    payloads.own("run_me")
    payloads.setAlive(new Set(["run_me"]), ADMITTED_AT + 60_000)
    expect(payloads.locate(event.eventId, "run_me", ADMITTED_AT)).toBeUndefined()
  })

  it("a live peer holds it", () => {
    const payloads = makePayloads(1 << 20)
    payloads.setAlive(new Set(["run_peer"]), ADMITTED_AT + 60_000)
    expect(payloads.locate(event.eventId, "run_peer", ADMITTED_AT)).toBe("elsewhere")
  })

  it("a peer missing from a list read before it admitted the event is not taken for dead", () => {
    const payloads = makePayloads(1 << 20)
    payloads.setAlive(new Set(["run_other"]), ADMITTED_AT - 1_000)
    expect(payloads.locate(event.eventId, "run_peer", ADMITTED_AT)).toBe("elsewhere")
    // Nor from one read at about the same time (the two clocks are not the same clock).
    payloads.setAlive(new Set(["run_other"]), ADMITTED_AT + 500)
    expect(payloads.locate(event.eventId, "run_peer", ADMITTED_AT)).toBe("elsewhere")
  })

  it("a peer missing from a list read well after it admitted the event is gone, and so is its payload", () => {
    const payloads = makePayloads(1 << 20)
    payloads.setAlive(new Set(["run_other"]), ADMITTED_AT + 10_000)
    expect(payloads.locate(event.eventId, "run_peer", ADMITTED_AT)).toBeUndefined()
  })
})

describe("trigger payloads: a full cache", () => {
  it("makes room from the project flooding it, and keeps a quieter project's payload for its retries", () => {
    const payloads = makePayloads(256 * 1024)
    const quiet = { ...event, eventId: "evt_trigger_quiet", projectId: "proj_quiet", data: { text: "q".repeat(10_000) } }
    payloads.set(quiet)
    for (let i = 0; i < 200; i++) payloads.set({ ...event, eventId: `evt_trigger_flood_${i}`, projectId: "proj_flood", data: { text: "f".repeat(10_000) } })
    expect(payloads.get(quiet.eventId)).toEqual(quiet)
    expect(payloads.get("evt_trigger_flood_199")).toBeDefined()
    expect(payloads.get("evt_trigger_flood_0")).toBeUndefined()
    expect(payloads.bytes()).toBeLessThanOrEqual(256 * 1024)
  })
})
