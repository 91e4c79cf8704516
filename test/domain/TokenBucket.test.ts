import { describe, expect, it } from "vitest"
import { takeWhole } from "../../domain/TokenBucket.ts"

describe("a whole take (a cost in bytes)", () => {
  const policy = { perMinute: 60_000, burst: 3_000 } // 1 token a millisecond
  it("takes all or nothing, and says in whole seconds (at least 1) when all will be there", () => {
    const first = takeWhole(policy, undefined, 2_500, 0)
    expect(first).toEqual({ state: { tokens: 500, updatedMs: 0 } })
    if (!("state" in first)) throw new Error("expected a take")
    // 500 left: 2,500 more are 2 s away; nothing is taken meanwhile.
    expect(takeWhole(policy, first.state, 2_500, 0)).toEqual({ retryAfter: 2 })
    expect(takeWhole(policy, first.state, 501, 0)).toEqual({ retryAfter: 1 })
    expect(takeWhole(policy, first.state, 2_500, 2_000)).toEqual({ state: { tokens: 0, updatedMs: 2_000 } })
    // More than the burst can never be taken whole.
    expect("retryAfter" in takeWhole(policy, undefined, 3_001, 0)).toBe(true)
  })
})
