import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { JsonObject } from "../../domain/JsonObject.ts"

const decode = Schema.decodeUnknownExit(JsonObject)

describe("JsonObject", () => {
  it("accepts JSON objects, nested or empty", () => {
    for (const value of [{}, { a: 1 }, { a: { b: [1, "x", null, true, { c: 2.5 }] } }]) {
      const exit = decode(value)
      expect(exit._tag === "Success" ? exit.value : exit).toStrictEqual(value)
    }
  })

  it("refuses arrays, null and scalars as not an object", () => {
    for (const value of [[], [1], null, "x", 1, true]) {
      const exit = decode(value)
      expect(exit._tag).toBe("Failure")
      expect(String(exit)).toContain("Expected object")
    }
  })

  it("refuses objects holding values JSON cannot carry", () => {
    for (const value of [{ a: undefined }, { a: Number.NaN }, { a: { b: () => 1 } }, { a: new Date(0) }]) {
      expect(decode(value)._tag).toBe("Failure")
    }
  })

  it("is an object in JSON Schema", () => {
    expect(Schema.toJsonSchemaDocument(JsonObject).schema).toStrictEqual({ type: "object" })
  })
})
