/**
 * Reads of projected views, and the in-memory tables that back them without a database.
 * The Postgres implementation lives in PgViewStore.ts.
 */
import { Context, Effect } from "effect"
import type { Json } from "./EventStore.ts"
import type { StoreUnavailable } from "./EventStore.ts"
import { OrderedIndex } from "./OrderedIndex.ts"
import type { Filter, ListQuery, Row, RowChange } from "./Projection.ts"
import { bucketOf, compareJson, isNull, matches } from "./RowOrder.ts"

export interface ViewStoreShape {
  readonly get: (table: string, key: Row) => Effect.Effect<Row | undefined, StoreUnavailable>
  readonly list: (table: string, query: ListQuery) => Effect.Effect<ReadonlyArray<Row>, StoreUnavailable>
}

export class ViewStore extends Context.Service<ViewStore, ViewStoreShape>()("app/infra/ViewStore") {}

/**
 * Every row of `table` that `where` keeps, in the order of `key` (a column that makes rows
 * unique), read `pageSize` rows at a time (start-up scans: recovery, open tasks).
 */
export const listAll = Effect.fnUntraced(function*(
  views: ViewStoreShape,
  table: string,
  query: { readonly where: ReadonlyArray<Filter>; readonly key: string; readonly pageSize: number }
) {
  const all: Array<Row> = []
  let after: ReadonlyArray<Json> | undefined
  while (true) {
    const rows = yield* views.list(table, { where: query.where, orderBy: [{ column: query.key, direction: "asc" }], after, limit: query.pageSize })
    all.push(...rows)
    const last = rows.at(-1)
    if (rows.length < query.pageSize || last === undefined) return all
    after = [last[query.key] ?? null]
  }
})

/**
 * One column of a primary key as text. Each part says how long it is, so the parts of a key never
 * run together; a string (the usual key) is taken as it is, anything else as its JSON.
 */
const keyPart = (value: Json | undefined): string => {
  if (typeof value === "string") return `${value.length}:${value}`
  const json = JSON.stringify(value ?? null)
  return `${json.length}j${json}`
}

/**
 * Plain maps keyed by primary key; the reference semantics for the Postgres store. A column that
 * a list filters with `=` gets a hash index (built at its first such list, then kept with every
 * change), which tells the list its smallest matching bucket; the list then walks that bucket in
 * its order from its cursor (OrderedIndex.ts, built for that column and order at its first use
 * and kept likewise), so a page visits about as many rows as it answers, not the bucket.
 */
export class MemoryTables {
  private readonly tables = new Map<string, Map<string, Row>>()
  private readonly keys: ReadonlyMap<string, ReadonlyArray<string>>
  /** table → column → bucket → primary keys of the rows holding that value. */
  private readonly indexes = new Map<string, Map<string, Map<string, Set<string>>>>()
  /** table → column and order → the bucket's keys in that order. */
  private readonly ordered = new Map<string, Map<string, OrderedIndex>>()

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
    const ordered = this.ordered.get(tableName)
    if (ordered !== undefined) for (const index of ordered.values()) index.change(key, previous, next)
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

  /**
   * The `=` filter whose bucket is smallest (undefined: the list has none); `null` when some `=`
   * filter matches no row at all.
   */
  private narrowest(tableName: string, where: ReadonlyArray<Filter>): Filter | undefined | null {
    let narrowest: Filter | undefined
    let smallest = Infinity
    for (const filter of where) {
      if (filter.op !== "=") continue
      if (isNull(filter.value)) return null
      const keys = this.index(tableName, filter.column).get(bucketOf(filter.value))
      if (keys === undefined) return null
      if (keys.size < smallest) {
        smallest = keys.size
        narrowest = filter
      }
    }
    return narrowest
  }

  private *bucketRows(table: ReadonlyMap<string, Row>, keys: Iterable<string> | undefined): Generator<readonly [string, Row]> {
    for (const key of keys ?? []) {
      const row = table.get(key)
      if (row !== undefined) yield [key, row]
    }
  }

  private orderedIndex(tableName: string, column: string | undefined, columns: ReadonlyArray<string>): OrderedIndex {
    let indexes = this.ordered.get(tableName)
    if (indexes === undefined) {
      indexes = new Map()
      this.ordered.set(tableName, indexes)
    }
    const signature = JSON.stringify([column ?? null, columns])
    let index = indexes.get(signature)
    if (index === undefined) {
      index = new OrderedIndex(column, columns)
      indexes.set(signature, index)
    }
    return index
  }

  get(table: string, key: Row): Row | undefined {
    return this.table(table).get(this.keyOf(table, key))
  }

  list(tableName: string, query: ListQuery): ReadonlyArray<Row> {
    const where = query.where ?? []
    const narrowest = this.narrowest(tableName, where)
    if (narrowest === null || query.limit <= 0) return []
    const direction = query.orderBy[0]?.direction ?? "asc"
    const index = this.orderedIndex(tableName, narrowest?.column, query.orderBy.map((order) => order.column))
    const table = this.table(tableName)
    const bucket = narrowest === undefined ? "" : bucketOf(narrowest.value)
    index.want(bucket, () => narrowest === undefined ? table : this.bucketRows(table, this.index(tableName, narrowest.column).get(bucket)))
    // A range on the first order column that the walk moves away from ends it at its first miss:
    // every later row is further out, or null (which no comparison matches).
    const first = query.orderBy[0]?.column
    const bounds = where.filter((filter) =>
      filter.column === first && (direction === "asc" ? filter.op === "<" || filter.op === "<=" : filter.op === ">" || filter.op === ">=")
    )
    const rows: Array<Row> = []
    for (const key of index.keys(bucket, direction, query.after)) {
      const row = table.get(key)
      if (row === undefined) continue
      if (where.every((filter) => matches(row, filter))) {
        rows.push(row)
        if (rows.length >= query.limit) break
      } else if (bounds.some((filter) => !isNull(row[filter.column]) && !matches(row, filter))) break
    }
    return rows
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
      this.ordered.delete(table)
    }
  }
}

export const memoryViewStore = (tables: MemoryTables): ViewStoreShape => ({
  get: (table, key) => Effect.sync(() => tables.get(table, key)),
  list: (table, query) => Effect.sync(() => tables.list(table, query))
})
