import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeKeyRing } from "../../../infra/access/Secrets.ts"

describe("sealing", () => {
  const ring = makeKeyRing(randomBytes(32))

  it("opens what it sealed, and nothing altered", () => {
    const sealed = ring.seal("whsec_plain")
    expect(ring.open(sealed)).toBe("whsec_plain")
    expect(ring.open(`${sealed.slice(0, -2)}AA`)).toBeUndefined()
  })

  it("a value sealed with a context opens only with that context", () => {
    const sealed = ring.seal("12:3", "mcp_session_a")
    expect(ring.open(sealed, "mcp_session_a")).toBe("12:3")
    expect(ring.open(sealed, "mcp_session_b")).toBeUndefined()
    expect(ring.open(sealed)).toBeUndefined()
    // And one sealed without a context needs none.
    expect(ring.open(ring.seal("12:3"), "mcp_session_a")).toBeUndefined()
  })

  it("during a rotation, the previous key's values open with their context too", () => {
    const previous = randomBytes(32)
    const old = makeKeyRing(previous).seal("7:1", "mcp_session_a")
    const rotating = makeKeyRing(randomBytes(32), previous)
    expect(rotating.open(old, "mcp_session_a")).toBe("7:1")
    expect(rotating.open(old, "mcp_session_b")).toBeUndefined()
  })
})
