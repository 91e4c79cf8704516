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
