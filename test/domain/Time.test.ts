import { describe, expect, it } from "@effect/vitest"
import { isoTime, parseIsoDateTime, parseTime } from "../../domain/Time.ts"

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

  it("reads a zoned ISO 8601 date-time only when its fields name a real instant", () => {
    for (const text of ["2026-11-22T18:00:00.000Z", "2024-02-29T23:59:59Z", "2000-02-29T00:00:00+14:00", "2026-11-22T18:00Z", "2026-11-22T18:00:00.123456789-05:30"]) {
      expect([text, parseIsoDateTime(text)]).toStrictEqual([text, Date.parse(text)])
    }
    for (const text of [
      "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z",
      "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z", "2026-01-01T00:60:00Z", "2026-01-01T00:00:60Z", "2026-01-01T00:00:00+24:00",
      "2026-01-01T00:00:00+00:60", "2026-01-01T00:00:00", "2026-01-01", "not a time", "2026-01-01T00:00:00ZZ"
    ]) {
      expect([text, parseIsoDateTime(text)]).toStrictEqual([text, Number.NaN])
    }
  })
})
