import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { checkCanonicalBase64, decodeCanonicalBase64, decodedLength } from "../../../domain/files/Base64.ts"

describe("canonical padded base64", () => {
  it("accepts the canonical encodings of 0..3 trailing bytes", () => {
    for (const text of ["", "AA==", "AAA=", "AAAA", "aGVsbG8=", "aGVsbG8h", "aGk=", "+/+/", "////"]) {
      expect(checkCanonicalBase64(text)).toBeUndefined()
      const decoded = decodeCanonicalBase64(text)
      expect(decoded._tag).toBe("ok")
      if (decoded._tag === "ok") expect(Buffer.from(decoded.bytes).toString("base64")).toBe(text)
    }
  })

  it.each([
    ["aGVsbG8", "length"],
    ["AAA*", "alphabet"],
    ["A*==", "alphabet"],
    ["AAAA\u0100AAA", "alphabet"],
    ["aGk", "length"],
    ["a", "length"],
    ["aGVsbG8-", "alphabet"],
    ["_-__", "alphabet"],
    ["aGVs bG8=", "length"],
    ["aGVsbG8=\n", "length"],
    ["aGVz\nbG8=", "length"],
    ["aGV zbG8", "alphabet"],
    ["aGVz\tbG8", "alphabet"],
    ["====", "padding"],
    ["A===", "padding"],
    ["AA=A", "padding"],
    ["AA==AA==", "padding"],
    ["aGVsbG9=", "non_canonical"],
    ["aGl=", "non_canonical"],
    ["AB==", "non_canonical"],
    ["AAB=", "non_canonical"],
    ["aé==", "alphabet"],
    // Node's decoder reads only the low byte of a character: U+0144 would pass for "D".
    ["QUJ\u0144", "alphabet"],
    ["\u0141\u0141\u0141\u0141", "alphabet"],
    ["QUJ\u4144", "alphabet"],
    ["QU\u0144=", "alphabet"]
  ])("refuses %j (%s)", (text, reason) => {
    expect(checkCanonicalBase64(text)).toBe(reason)
    expect(decodeCanonicalBase64(text)).toEqual({ _tag: "invalid", reason })
  })

  it("decodedLength is the byte count of canonical input", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      expect(decodedLength(Buffer.from(bytes).toString("base64"))).toBe(bytes.length)
    }))
  })

  it("round-trips every byte string", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
      const text = Buffer.from(bytes).toString("base64")
      const decoded = decodeCanonicalBase64(text)
      expect(decoded._tag === "ok" && Buffer.from(decoded.bytes).equals(Buffer.from(bytes))).toBe(true)
    }))
  })

  // The definition of canonical: a string is accepted exactly when re-encoding its bytes gives it back.
  it("accepts a string if and only if re-encoding its decoded bytes reproduces it", () => {
    const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_ \n\t\r*.!é\u0100\u0141\u0144\u4144\u{1F600}\u0000".split("")
    const near = fc.oneof(
      fc.array(fc.constantFrom(...chars), { maxLength: 16 }).map((a) => a.join("")),
      fc.uint8Array({ maxLength: 12 }).chain((bytes) => {
        const text = Buffer.from(bytes).toString("base64")
        return fc.tuple(fc.nat(Math.max(0, text.length)), fc.constantFrom(...chars)).map(([i, c]) =>
          text.slice(0, i) + c + text.slice(i + 1))
      })
    )
    fc.assert(fc.property(near, (text) => {
      const canonical = Buffer.from(text, "base64").toString("base64") === text
      expect(checkCanonicalBase64(text) === undefined).toBe(canonical)
      const decoded = decodeCanonicalBase64(text)
      expect(decoded._tag === "ok").toBe(canonical)
      if (decoded._tag === "invalid") expect(checkCanonicalBase64(text)).toBe(decoded.reason)
    }), { numRuns: 5000 })
  })
})
