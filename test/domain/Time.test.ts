import { describe, expect, it } from "@effect/vitest"
import { isoTime, parseTime } from "../../domain/Time.ts"

describe("time", () => {
  it("formats each instant as Date does, asked again or in turn", () => {
    for (const ms of [0, 1_700_000_000_123, 1_700_000_000_123, 1_700_000_000_124, 0, Date.UTC(2026, 10, 22, 23, 59, 59, 999)]) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString())
    }
  })

  it("reads each timestamp as Date.parse does, asked again or in turn", () => {
    for (const text of ["2026-11-22T18:00:00.000Z", "2026-11-22T18:00:00.000Z", "2026-11-22T18:00:00.001Z", "not a time", "1970-01-01T00:00:00.000Z"]) {
      expect(parseTime(text)).toStrictEqual(Date.parse(text))
    }
  })
})
