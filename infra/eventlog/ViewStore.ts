/**
 * Reads of projected views, and the in-memory tables that back them without a database.
 * The Postgres implementation lives in PgViewStore.ts.
 */
import { Context, Effect } from "effect"
import type { Json } from "./EventStore.ts"
import type { StoreUnavailable } from "./EventStore.ts"
import type { Filter, ListQuery, Row, RowChange } from "./Projection.ts"

export interface ViewStoreShape {
  readonly get: (table: string, key: Row) => Effect.Effect<Row | undefined, StoreUnavailable>
  readonly list: (table: string, query: ListQuery) => Effect.Effect<ReadonlyArray<Row>, StoreUnavailable>
}

export class ViewStore extends Context.Service<ViewStore, ViewStoreShape>()("app/infra/ViewStore") {}

/** Code point order, which is the byte order of UTF-8 (UTF-16 units put U+E000 after U+1F600). */
const compareText = (a: string, b: string): number => {
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

const isNull = (v: Json | undefined): v is null | undefined => v === undefined || v === null

/** Sort order as Postgres has it: nulls after every value in ascending order. */
const compareJson = (a: Json | undefined, b: Json | undefined): number => {
  if (isNull(a)) return isNull(b) ? 0 : 1
  if (isNull(b)) return -1
  if (a === b) return 0
  if (typeof a === "number" && typeof b === "number") return a - b
  if (typeof a === "boolean" && typeof b === "boolean") return Number(a) - Number(b)
  // Byte order, as Postgres compares text under the C collation the tables use.
  return compareText(typeof a === "string" ? a : JSON.stringify(a), typeof b === "string" ? b : JSON.stringify(b))
}

/** SQL semantics: a comparison with null matches nothing; `!=` is IS DISTINCT FROM. */
const matches = (row: Row, filter: Filter): boolean => {
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

/**
 * One column of a primary key as text. Each part says how long it is, so the parts of a key never
 * run together; a string (the usual key) is taken as it is, anything else as its JSON.
 */
const keyPart = (value: Json | undefined): string => {
  if (typeof value === "string") return `${value.length}:${value}`
  const json = JSON.stringify(value ?? null)
  return `${json.length}j${json}`
}

/** Equal under `compareJson` exactly when equal here (for non-null values). */
const bucketOf = (value: Json): string => (typeof value === "string" ? value : JSON.stringify(value))

/**
 * Plain maps keyed by primary key; the reference semantics for the Postgres store. A column that
 * a list filters with `=` gets a hash index (built at its first such list, then kept with every
 * change), so such lists visit only the rows of the smallest matching bucket instead of the table.
 */
export class MemoryTables {
  private readonly tables = new Map<string, Map<string, Row>>()
  private readonly keys: ReadonlyMap<string, ReadonlyArray<string>>
  /** table → column → bucket → primary keys of the rows holding that value. */
  private readonly indexes = new Map<string, Map<string, Map<string, Set<string>>>>()

  constructor(primaryKeys: ReadonlyMap<string, ReadonlyArray<string>>) {
    this.keys = primaryKeys
  }

  private table(name: string): Map<string, Row> {
    let table = this.tables.get(name)
    if (table === undefined) {
      table = new Map()
      this.tables.set(name, table)
    }
    return table
  }

  private keyOf(table: string, row: Row): string {
    const columns = this.keys.get(table)
    if (columns === undefined) throw new Error(`unknown view table ${table}`)
    let key = ""
    for (const column of columns) key += keyPart(row[column])
    return key
  }

  private static place(index: Map<string, Set<string>>, value: Json | undefined, key: string): void {
    if (isNull(value)) return
    const bucket = bucketOf(value)
    const keys = index.get(bucket)
    if (keys === undefined) index.set(bucket, new Set([key]))
    else keys.add(key)
  }

  private static displace(index: Map<string, Set<string>>, value: Json | undefined, key: string): void {
    if (isNull(value)) return
    const bucket = bucketOf(value)
    const keys = index.get(bucket)
    keys?.delete(key)
    if (keys?.size === 0) index.delete(bucket)
  }

  /** Writes (or with `next` undefined deletes) a row, keeping the table's indexes. */
  private put(tableName: string, table: Map<string, Row>, key: string, next: Row | undefined): void {
    const previous = table.get(key)
    if (next === undefined) table.delete(key)
    else table.set(key, next)
    const indexes = this.indexes.get(tableName)
    if (indexes === undefined) return
    for (const [column, index] of indexes) {
      const before = previous?.[column]
      const after = next?.[column]
      if (before === after) continue
      MemoryTables.displace(index, before, key)
      MemoryTables.place(index, after, key)
    }
  }

  private index(tableName: string, column: string): Map<string, Set<string>> {
    let indexes = this.indexes.get(tableName)
    if (indexes === undefined) {
      indexes = new Map()
      this.indexes.set(tableName, indexes)
    }
    let index = indexes.get(column)
    if (index === undefined) {
      index = new Map()
      for (const [key, row] of this.table(tableName)) MemoryTables.place(index, row[column], key)
      indexes.set(column, index)
    }
    return index
  }

  apply(changes: ReadonlyArray<RowChange>): void {
    for (let i = 0; i < changes.length; i++) {
      const change = changes[i]!
      const table = this.table(change.table)
      switch (change.op) {
        case "upsert": {
          const key = this.keyOf(change.table, change.row)
          // Upserts of one row in a row (an execution's request, start and outcome in one
          // commit) are written once, as applying each would leave it.
          let row = { ...table.get(key), ...change.row }
          for (let next = changes[i + 1]; next?.op === "upsert" && next.table === change.table; next = changes[i + 1]) {
            if (this.keyOf(next.table, next.row) !== key) break
            row = { ...row, ...next.row }
            i++
          }
          this.put(change.table, table, key, row)
          break
        }
        case "update": {
          const key = this.keyOf(change.table, change.key)
          const existing = table.get(key)
          if (existing !== undefined) this.put(change.table, table, key, { ...existing, ...change.set })
          break
        }
        case "delete":
          this.put(change.table, table, this.keyOf(change.table, change.key), undefined)
          break
        case "append": {
          const key = this.keyOf(change.table, change.key)
          const existing = table.get(key)
          if (existing === undefined) break
          const current = existing[change.column]
          const list = Array.isArray(current) ? current : []
          this.put(change.table, table, key, { ...existing, [change.column]: [...list, change.value] })
          break
        }
      }
    }
  }

  /** The rows a list must visit: the smallest bucket among its `=` filters, else the table. */
  private candidates(tableName: string, where: ReadonlyArray<Filter>): Iterable<Row> {
    const table = this.table(tableName)
    let smallest: Set<string> | undefined
    for (const filter of where) {
      if (filter.op !== "=") continue
      if (isNull(filter.value)) return []
      const keys = this.index(tableName, filter.column).get(bucketOf(filter.value))
      if (keys === undefined) return []
      if (smallest === undefined || keys.size < smallest.size) smallest = keys
    }
    if (smallest === undefined) return table.values()
    const rows: Array<Row> = []
    for (const key of smallest) {
      const row = table.get(key)
      if (row !== undefined) rows.push(row)
    }
    return rows
  }

  get(table: string, key: Row): Row | undefined {
    return this.table(table).get(this.keyOf(table, key))
  }

  list(table: string, query: ListQuery): ReadonlyArray<Row> {
    const where = query.where ?? []
    const direction = query.orderBy[0]?.direction === "asc" ? 1 : -1
    const compareRows = (a: Row, b: Row): number => {
      for (const order of query.orderBy) {
        const c = compareJson(a[order.column], b[order.column])
        if (c !== 0) return c * direction
      }
      return 0
    }
    const after = query.after
    const afterRow: Row | undefined = after === undefined
      ? undefined
      : Object.fromEntries(query.orderBy.map((order, i) => [order.column, after[i]]))
    const rows: Array<Row> = []
    for (const row of this.candidates(table, where)) {
      if (!where.every((filter) => matches(row, filter))) continue
      if (afterRow !== undefined && compareRows(row, afterRow) <= 0) continue
      rows.push(row)
    }
    rows.sort(compareRows)
    return rows.slice(0, query.limit)
  }

  /** Every row of a table in primary-key order (tests compare replayed tables with it). */
  dump(table: string): ReadonlyArray<Row> {
    // Compared column by column as Postgres orders them; the JSON map keys would put "a 1"
    // before "a" and 10 before 9.
    const columns = this.keys.get(table) ?? []
    return [...this.table(table).values()].toSorted((a, b) => {
      for (const column of columns) {
        const c = compareJson(a[column], b[column])
        if (c !== 0) return c
      }
      return 0
    })
  }

  /**
   * Removes the rows of `table` that `drop` accepts, visiting them in insertion order and
   * stopping at the first for which it answers "stop"; answers the removed rows.
   */
  removeWhile(table: string, drop: (row: Row) => boolean | "stop"): ReadonlyArray<Row> {
    const rows = this.table(table)
    const removed: Array<Row> = []
    for (const [key, row] of rows) {
      const verdict = drop(row)
      if (verdict === "stop") break
      if (verdict) {
        this.put(table, rows, key, undefined)
        removed.push(row)
      }
    }
    return removed
  }

  /** Rows held, per table (the memory benchmark reports heap per retained row). */
  sizes(): ReadonlyMap<string, number> {
    return new Map([...this.tables].map(([name, rows]) => [name, rows.size]))
  }

  clear(tables: ReadonlyArray<string>): void {
    for (const table of tables) {
      this.tables.delete(table)
      this.indexes.delete(table)
    }
  }
}

export const memoryViewStore = (tables: MemoryTables): ViewStoreShape => ({
  get: (table, key) => Effect.sync(() => tables.get(table, key)),
  list: (table, query) => Effect.sync(() => tables.list(table, query))
})
