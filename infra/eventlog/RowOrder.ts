/**
 * How the memory tables compare values, as Postgres does for the views' columns: text in code
 * point order (the C collation), numbers and booleans by value, nulls after every value in
 * ascending order; what a `=` filter groups by; and which rows a filter matches.
 */
import type { Json } from "./EventStore.ts"
import type { Filter, Row } from "./Projection.ts"

/** Code point order from the first code unit on; the slow path of `compareText`. */
const compareCodePoints = (a: string, b: string): number => {
  const ia = a[Symbol.iterator]()
  const ib = b[Symbol.iterator]()
  while (true) {
    const x = ia.next()
    const y = ib.next()
    if (x.done === true) return y.done === true ? 0 : -1
    if (y.done === true) return 1
    const d = (x.value.codePointAt(0) ?? 0) - (y.value.codePointAt(0) ?? 0)
    if (d !== 0) return d
  }
}

/**
 * Code point order, which is the byte order of UTF-8 (UTF-16 units put U+E000 after U+1F600).
 * Below the surrogates the two orders agree, so only a difference at or past U+D800 takes the
 * slow path, from where the texts differ.
 */
const compareText = (a: string, b: string): number => {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    return x < 0xd800 && y < 0xd800 ? x - y : compareCodePoints(a.slice(i), b.slice(i))
  }
  return a.length - b.length
}

export const isNull = (v: Json | undefined): v is null | undefined => v === undefined || v === null

/** Sort order as Postgres has it: nulls after every value in ascending order. */
export const compareJson = (a: Json | undefined, b: Json | undefined): number => {
  if (isNull(a)) return isNull(b) ? 0 : 1
  if (isNull(b)) return -1
  if (a === b) return 0
  if (typeof a === "number" && typeof b === "number") return a - b
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b)
  // Byte order, as Postgres compares text under the C collation the tables use.
  return compareText(typeof a === "string" ? a : JSON.stringify(a), typeof b === "string" ? b : JSON.stringify(b))
}

/** Equal under `compareJson` exactly when equal here (for non-null values). */
export const bucketOf = (value: Json): string => (typeof value === "string" ? value : JSON.stringify(value))

/** SQL semantics: a comparison with null matches nothing; `!=` is IS DISTINCT FROM. */
export const matches = (row: Row, filter: Filter): boolean => {
  const value = row[filter.column]
  if (filter.op === "!=") return isNull(value) !== isNull(filter.value) || compareJson(value, filter.value) !== 0
  if (isNull(value) || isNull(filter.value)) return false
  const c = compareJson(value, filter.value)
  switch (filter.op) {
    case "=":
      return c === 0
    case "<":
      return c < 0
    case "<=":
      return c <= 0
    case ">":
      return c > 0
    case ">=":
      return c >= 0
  }
}
