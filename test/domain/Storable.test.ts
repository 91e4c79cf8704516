/**
 * What the log can keep (domain/Storable.ts): the check on values and the one on JSON text agree
 * on every JSON value, and each refuses NUL characters, lone surrogates and deep nesting.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MAX_DEPTH, unstorable, unstorableText } from "../../domain/Storable.ts"

const nest = (levels: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < levels; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

describe("storable JSON", () => {
  it.each([
    ["a NUL in a string", { a: "x\u0000y" }, "nul"],
    ["a NUL in a key", { ["k\u0000"]: 1 }, "nul"],
    ["a lone high surrogate", ["\ud800"], "surrogate"],
    ["a lone low surrogate", ["\udc00x"], "surrogate"],
    ["a surrogate pair", { a: "a\ud83d\ude00b" }, undefined],
    ["nesting at the limit", nest(MAX_DEPTH), undefined],
    ["nesting past the limit", nest(MAX_DEPTH + 1), "depth"],
    ["a backslash before u0000", { a: "\\u0000 is only text here" }, undefined]
  ])("%s: %s", (_, value, expected) => {
    expect(unstorable(value)).toBe(expected)
    expect(unstorableText(JSON.stringify(value))).toBe(expected)
  })

  it("leaves a raw NUL inside a string, which is no JSON, to the parser (400, not 422)", () => {
    expect(unstorableText(String.raw`{"a":"x\u0000y"}`)).toBe("nul")
    expect(unstorableText('{"a":"x\0y"}')).toBeUndefined()
    expect(() => JSON.parse('{"a":"x\0y"}')).toThrow(SyntaxError)
  })

  it("text whose strings are never stored may hold a NUL, and nothing else it could not keep", () => {
    expect(unstorableText(JSON.stringify({ a: "x\u0000y" }), true)).toBeUndefined()
    expect(unstorableText(JSON.stringify({ a: "x\u0000y", b: "\ud800" }), true)).toBe("surrogate")
    expect(unstorableText(`${"[".repeat(MAX_DEPTH + 1)}${"]".repeat(MAX_DEPTH + 1)}`, true)).toBe("depth")
  })

  it("nesting twenty thousand levels deep is refused without overflowing the stack", () => {
    expect(unstorable(nest(20_000))).toBe("depth")
    expect(unstorableText(`${"[".repeat(20_000)}${"]".repeat(20_000)}`)).toBe("depth")
  })

  it("a value that cannot be stored is refused by both checks, on any JSON", () => {
    fc.assert(fc.property(fc.jsonValue({ maxDepth: 6 }), fc.string({ unit: "binary" }), (value, text) => {
      for (const candidate of [value, { wrap: value, text }]) {
        expect(unstorableText(JSON.stringify(candidate))).toBe(unstorable(candidate))
      }
    }), { numRuns: 2_000 })
  })

  it("long strings, which the check on text crosses by runs, are judged like their parsed value", () => {
    const long = (text: string, at: number) => `${"x".repeat(at)}${text}${"y".repeat(40)}`
    for (const at of [0, 31, 32, 33, 64, 1000]) {
      for (const value of [{ a: long("\u0000", at) }, [long("\ud800", at)], [long("\udc00", at)], { a: long("\ud83d\ude00", at) }, [long("\\u0000\"", at)]]) {
        expect(unstorableText(JSON.stringify(value))).toBe(unstorable(value))
      }
      expect(unstorableText(`["${"z".repeat(at)}\\u0000"]`)).toBe("nul")
      expect(unstorableText(`["${"z".repeat(at)}"${"[".repeat(MAX_DEPTH)}]`)).toBe("depth")
    }
    fc.assert(fc.property(fc.nat(200), fc.string({ unit: "binary", maxLength: 80 }), fc.nat(80), (before, text, after) => {
      const value = { s: `${"b".repeat(before)}${text}${"a".repeat(after)}`, k: [text] }
      expect(unstorableText(JSON.stringify(value))).toBe(unstorable(value))
    }), { numRuns: 3_000 })
  })

  it("text with raw control characters or escapes in odd places is judged like its parsed value", () => {
    for (const text of [`"\\\\u0000"`, `["\\ud800\\udc00"]`, `["\\ud800\\u0041"]`, `{"a":"\\u0000"}`, `"\\\\"`]) {
      expect(unstorableText(text)).toBe(unstorable(JSON.parse(text)))
    }
  })
})
