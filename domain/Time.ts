/**
 * Timestamps as records carry them (ISO 8601, UTC, milliseconds). An execution formats and reads
 * the same instant several times (requested, started and completed within a millisecond, its
 * latency, its view row), so each function keeps its last answer.
 */

let lastMs = Number.NaN
let lastIso = ""

/** `2026-11-22T18:00:00.000Z` for a Unix time in milliseconds. */
export const isoTime = (ms: number): string => {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString()
    lastMs = ms
  }
  return lastIso
}

let lastText = ""
let lastParsed = Number.NaN

/** Milliseconds of an ISO 8601 timestamp (`Date.parse`). */
export const parseTime = (text: string): number => {
  if (text !== lastText) {
    lastParsed = Date.parse(text)
    lastText = text
  }
  return lastParsed
}

/** An ISO 8601 date-time with an explicit zone (`Z` or an offset); seconds and fractions optional. */
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/

const daysInMonth = (year: number, month: number): number =>
  month === 2 ? (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/**
 * Milliseconds of a zoned ISO 8601 date-time whose fields name a real instant, or NaN.
 * `Date.parse` alone throws no error for an impossible date: it rolls 30 February over to March
 * and hour 24 to the next day, while a month 13 or a second 60 yields NaN, so the fields are
 * checked first.
 */
export const parseIsoDateTime = (text: string): number => {
  const fields = ISO_DATE_TIME.exec(text)
  if (fields === null) return Number.NaN
  const [year, month, day, hour, minute, second = 0, offsetHours = 0, offsetMinutes = 0] = fields.slice(1).map((field) =>
    field === undefined ? undefined : Number(field)
  ) as [number, number, number, number, number, number?, number?, number?]
  const real = month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour <= 23 && minute <= 59 && second <= 59 &&
    offsetHours <= 23 && offsetMinutes <= 59
  return real ? Date.parse(text) : Number.NaN
}
