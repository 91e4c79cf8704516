import { describe, expect, it } from "vitest"
import { aggregateStatus } from "../../../domain/triggers/DeliveryStatus.ts"

describe("aggregate deliveryStatus", () => {
  it("before the targets: the phase itself", () => {
    expect(aggregateStatus("not_enqueued", [])).toBe("not_enqueued")
    expect(aggregateStatus("selecting", [])).toBe("selecting")
    expect(aggregateStatus("admission_failed", [])).toBe("admission_failed")
    expect(aggregateStatus("no_targets", [])).toBe("no_targets")
    expect(aggregateStatus("targets", [])).toBe("no_targets")
  })

  it("pending while no target has had an attempt", () => {
    expect(aggregateStatus("targets", ["pending"])).toBe("pending")
    expect(aggregateStatus("targets", ["pending", "pending"])).toBe("pending")
  })

  it("delivering while some target is unfinished and one has moved", () => {
    expect(aggregateStatus("targets", ["delivering"])).toBe("delivering")
    expect(aggregateStatus("targets", ["pending", "succeeded"])).toBe("delivering")
    expect(aggregateStatus("targets", ["pending", "failed"])).toBe("delivering")
    expect(aggregateStatus("targets", ["delivering", "succeeded", "failed"])).toBe("delivering")
  })

  it("all finished: succeeded, failed or partial", () => {
    expect(aggregateStatus("targets", ["succeeded"])).toBe("succeeded")
    expect(aggregateStatus("targets", ["succeeded", "succeeded"])).toBe("succeeded")
    expect(aggregateStatus("targets", ["failed", "failed"])).toBe("failed")
    expect(aggregateStatus("targets", ["succeeded", "failed"])).toBe("partial")
  })
})
