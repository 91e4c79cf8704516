import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { encodeIdBody, ExecutionId, ID_BODY_LENGTH, ID_RANDOM_BYTES, idTimeMs } from "../../domain/Ids.ts"
import { newId } from "../../infra/Ids.ts"

describe("ids", () => {
  it("encode the time in 10 characters, then 22 random ones", () => {
    expect(encodeIdBody(1, new Uint8Array(ID_RANDOM_BYTES).fill(0xff))).toBe(`0000000001${"z".repeat(22)}`)
    expect(encodeIdBody(32 * 32 + 2, new Uint8Array(ID_RANDOM_BYTES))).toBe(`0000000102${"0".repeat(22)}`)
    // 0x84 0x21 is 10000 10000 10000 1...: three "g" (16).
    expect(encodeIdBody(0, Uint8Array.of(0x84, 0x21, ...Array.from({ length: ID_RANDOM_BYTES - 2 }, () => 0))).slice(10, 13)).toBe("ggg")
  })

  it("read the random bytes from the given offset", () => {
    const pool = Uint8Array.from({ length: 3 * ID_RANDOM_BYTES }, (_, i) => (i * 37) & 0xff)
    const second = pool.slice(ID_RANDOM_BYTES, 2 * ID_RANDOM_BYTES)
    expect(encodeIdBody(5, pool, "evt", ID_RANDOM_BYTES)).toBe(encodeIdBody(5, second, "evt"))
    expect(encodeIdBody(5, pool, "evt", ID_RANDOM_BYTES)).not.toBe(encodeIdBody(5, pool, "evt"))
  })

  it("put the prefix and an underscore in front when given one", () => {
    const random = Uint8Array.from({ length: ID_RANDOM_BYTES }, (_, i) => i * 17)
    const body = encodeIdBody(1_700_000_000_000, random)
    expect(body).toHaveLength(ID_BODY_LENGTH)
    expect(encodeIdBody(1_700_000_000_000, random, "exe")).toBe(`exe_${body}`)
    expect(idTimeMs(`exe_${body}`)).toBe(1_700_000_000_000)
  })

  it("new ids match their schema, carry their creation time and differ", () => {
    const before = Date.now()
    const ids = Array.from({ length: 1000 }, () => newId("exe"))
    expect(new Set(ids).size).toBe(1000)
    for (const id of ids) {
      expect(Schema.is(ExecutionId)(id)).toBe(true)
      expect(idTimeMs(id)).toBeGreaterThanOrEqual(before)
      expect(idTimeMs(id)).toBeLessThanOrEqual(Date.now())
    }
  })
})
