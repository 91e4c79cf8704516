/**
 * A memory table's rows kept in one list order (the columns of a `ListQuery.orderBy`), split by
 * the value of one `=` column (or not split at all), so that a page is a binary search to its
 * cursor and a walk of the rows after it, as Postgres walks a btree: a page of 100 costs about
 * the same over 100 rows or 100,000. The table's hash indexes (ViewStore.ts) choose the column
 * whose bucket is smallest; this index keeps, for that column and order, the buckets lists have
 * read, each built at its first list and kept with every change after.
 *
 * Entries hold a row's key and its order values, not the row: a change that moves neither (an
 * attempt recorded on a delivery, say) leaves the index alone, and a walk reads the current row
 * by its key. An entry that leaves is only marked; its run is compacted once half of it is marked,
 * so the oldest rows leaving one by one (retention) cost no shift of the whole run each.
 */
import type { Json } from "./EventStore.ts"
import type { Row } from "./Projection.ts"
import { bucketOf, compareJson, isNull } from "./RowOrder.ts"

interface Entry {
  readonly key: string
  readonly values: ReadonlyArray<Json | undefined>
  readonly run: Run
  gone: boolean
}

/** One bucket's entries in ascending order (by values, then key), marked ones included. */
interface Run {
  readonly bucket: string
  entries: Array<Entry>
  gone: number
}

const compareValues = (a: ReadonlyArray<Json | undefined>, b: ReadonlyArray<Json | undefined>): number => {
  for (let i = 0; i < a.length; i++) {
    const c = compareJson(a[i], b[i])
    if (c !== 0) return c
  }
  return 0
}

const compareEntries = (a: Entry, b: Entry): number => {
  const c = compareValues(a.values, b.values)
  return c !== 0 ? c : a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

/** The first position whose entry `before` does not hold for (entries where it holds come first). */
const partition = (entries: ReadonlyArray<Entry>, before: (entry: Entry) => boolean): number => {
  let low = 0
  let high = entries.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (before(entries[middle]!)) low = middle + 1
    else high = middle
  }
  return low
}

/** Runs with fewer marked entries than this are not compacted, however small. */
const COMPACT_AT_LEAST = 64

export class OrderedIndex {
  private readonly runs = new Map<string, Run>()
  private readonly byKey = new Map<string, Entry>()

  /**
   * The `=` column that splits the rows into buckets; undefined for one bucket of the whole
   * table. A row whose value there is null is in no bucket (`=` null matches nothing).
   */
  readonly column: string | undefined
  /** The order's columns, compared ascending (a descending list walks backwards). */
  readonly columns: ReadonlyArray<string>

  constructor(column: string | undefined, columns: ReadonlyArray<string>) {
    this.column = column
    this.columns = columns
  }

  private bucketOfRow(row: Row): string | undefined {
    if (this.column === undefined) return ""
    const value = row[this.column]
    return isNull(value) ? undefined : bucketOf(value)
  }

  private valuesOf(row: Row): ReadonlyArray<Json | undefined> {
    return this.columns.map((column) => row[column])
  }

  /**
   * Makes sure `bucket` is kept, from `rows` (its rows, in any order) the first time: only the
   * buckets lists have asked for are kept, so a large bucket no list reads (the finished
   * deliveries beside the open ones) costs nothing.
   */
  want(bucket: string, rows: () => Iterable<readonly [string, Row]>): void {
    if (this.runs.has(bucket)) return
    const run = this.run(bucket)
    for (const [key, row] of rows()) {
      const entry: Entry = { key, values: this.valuesOf(row), run, gone: false }
      run.entries.push(entry)
      this.byKey.set(key, entry)
    }
    run.entries.sort(compareEntries)
  }

  private run(bucket: string): Run {
    let run = this.runs.get(bucket)
    if (run === undefined) {
      run = { bucket, entries: [], gone: 0 }
      this.runs.set(bucket, run)
    }
    return run
  }

  /** Follows a row's change: `previous` and `next` as the table held them (undefined: absent). */
  change(key: string, previous: Row | undefined, next: Row | undefined): void {
    const held = this.byKey.get(key)
    const bucket = next === undefined ? undefined : this.bucketOfRow(next)
    if (held !== undefined && bucket === held.run.bucket && next !== undefined && previous !== undefined) {
      let moved = false
      for (let i = 0; i < this.columns.length && !moved; i++) {
        const column = this.columns[i]!
        moved = previous[column] !== next[column] && compareJson(previous[column], next[column]) !== 0
      }
      if (!moved) return
    }
    if (held !== undefined) this.remove(held)
    const run = bucket === undefined ? undefined : this.runs.get(bucket)
    if (next === undefined || run === undefined) return
    const entry: Entry = { key, values: this.valuesOf(next), run, gone: false }
    const entries = run.entries
    const last = entries[entries.length - 1]
    // Rows mostly arrive in order: appended without a search.
    if (last === undefined || compareEntries(last, entry) < 0) entries.push(entry)
    else entries.splice(partition(entries, (other) => compareEntries(other, entry) < 0), 0, entry)
    this.byKey.set(key, entry)
  }

  private remove(entry: Entry): void {
    const run = entry.run
    this.byKey.delete(entry.key)
    entry.gone = true
    run.gone++
    // A run left empty is dropped; a later list of its bucket starts it again.
    if (run.gone === run.entries.length) this.runs.delete(run.bucket)
    else if (run.gone >= COMPACT_AT_LEAST && run.gone * 2 >= run.entries.length) {
      run.entries = run.entries.filter((kept) => !kept.gone)
      run.gone = 0
    }
  }

  /**
   * The keys of a wanted bucket's rows in list order, from just past `after` (the order values of
   * the previous page's last row; rows equal to it are skipped, as a keyset page does).
   */
  *keys(bucket: string, direction: "asc" | "desc", after: ReadonlyArray<Json | undefined> | undefined): Generator<string> {
    const run = this.runs.get(bucket)
    if (run === undefined) return
    const entries = run.entries
    if (direction === "asc") {
      const start = after === undefined ? 0 : partition(entries, (entry) => compareValues(entry.values, after) <= 0)
      for (let i = start; i < entries.length; i++) if (!entries[i]!.gone) yield entries[i]!.key
    } else {
      const end = after === undefined ? entries.length : partition(entries, (entry) => compareValues(entry.values, after) < 0)
      for (let i = end - 1; i >= 0; i--) if (!entries[i]!.gone) yield entries[i]!.key
    }
  }
}
