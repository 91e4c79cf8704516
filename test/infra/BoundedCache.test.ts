/**
 * The bounded LRU cache (infra/BoundedCache.ts): least recently used first, expiry, and, shared
 * between groups, room taken from the heaviest group. The defect the groups guard against: one
 * project's flood of trigger events pushed another project's payloads out of the shared cache,
 * and that project's deliveries, waiting for a retry, failed with `payload_unavailable`.
 */
import { describe, expect, it } from "vitest"
import { BoundedCache } from "../../infra/BoundedCache.ts"

interface Item {
  readonly project: string
  readonly bytes: number
}

const grouped = (maxWeight: number) =>
  new BoundedCache<string, Item>({ maxWeight, weigh: (item) => item.bytes, groupOf: (item) => item.project })

describe("BoundedCache", () => {
  it("drops the least recently used entry when the bound is passed", () => {
    const cache = new BoundedCache<string, number>({ maxWeight: 2 })
    cache.set("a", 1)
    cache.set("b", 2)
    expect(cache.get("a")).toBe(1)
    cache.set("c", 3)
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual([1, undefined, 3])
    expect(cache.size).toBe(2)
  })

  it("forgets an expired entry and its weight", () => {
    const cache = new BoundedCache<string, number>({ maxWeight: 10, ttlMs: 1_000 })
    cache.set("a", 1, 0)
    expect(cache.get("a", 999)).toBe(1)
    expect(cache.get("a", 2_000)).toBeUndefined()
    expect(cache.totalWeight).toBe(0)
  })

  it("keeps nothing heavier than the whole cache, and evicts nothing for it", () => {
    const cache = grouped(100)
    cache.set("small", { project: "p1", bytes: 10 })
    cache.set("huge", { project: "p2", bytes: 101 })
    expect(cache.get("small")).toEqual({ project: "p1", bytes: 10 })
    expect(cache.get("huge")).toBeUndefined()
    expect(cache.totalWeight).toBe(10)
  })

  it("takes the room for a flooding group's entries from that group, not from a lighter one", () => {
    const cache = grouped(1_000)
    cache.set("b-1", { project: "proj_b", bytes: 100 })
    cache.set("b-2", { project: "proj_b", bytes: 100 })
    for (let i = 0; i < 400; i++) cache.set(`a-${i}`, { project: "proj_a", bytes: 90 })
    expect(cache.get("b-1")).toEqual({ project: "proj_b", bytes: 100 })
    expect(cache.get("b-2")).toEqual({ project: "proj_b", bytes: 100 })
    expect(cache.get("a-399")).toEqual({ project: "proj_a", bytes: 90 })
    expect(cache.get("a-0")).toBeUndefined()
    expect(cache.totalWeight).toBeLessThanOrEqual(1_000)
    expect(cache.groupWeight("proj_b")).toBe(200)
    expect(cache.groupWeight("proj_a")).toBe(cache.totalWeight - 200)
  })

  it("evicts from whichever group is heaviest, a quiet one included once it holds the most", () => {
    const cache = grouped(300)
    cache.set("b-1", { project: "proj_b", bytes: 100 })
    cache.set("b-2", { project: "proj_b", bytes: 100 })
    cache.set("a-1", { project: "proj_a", bytes: 100 })
    // Full: a fourth entry of A's makes A and B equal (200 each) and one must go.
    cache.set("a-2", { project: "proj_a", bytes: 100 })
    expect(cache.totalWeight).toBe(300)
    expect(cache.groupWeight("proj_a") + cache.groupWeight("proj_b")).toBe(300)
    // Whoever lost, B's and A's most recent entries stay.
    expect(cache.get("b-2")).toBeDefined()
    expect(cache.get("a-2")).toBeDefined()
  })

  it("leaves no empty group behind", () => {
    const cache = grouped(100)
    cache.set("x", { project: "p1", bytes: 10 })
    cache.delete("x")
    expect(cache.groupWeight("p1")).toBe(0)
    cache.set("x", { project: "p1", bytes: 10 })
    cache.clear()
    expect([cache.size, cache.totalWeight, cache.groupWeight("p1")]).toEqual([0, 0, 0])
  })
})
