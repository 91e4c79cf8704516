/**
 * List pages of the memory views (infra/eventlog/ViewStore.ts with OrderedIndex.ts) over large
 * tables, shaped as the service's own lists: a project's executions newest first (first page, and
 * a page from a cursor with a second `=` filter), a project's trigger history, the history
 * sweep's expired rows (none, so the walk's early end is what is measured), a lane's open
 * deliveries and the open-delivery gauge. Beside each, the same page the way the memory tables
 * answered before the ordered index: every row of the bucket filtered, sorted and cut (same rows,
 * same process, same run). Also: appends per row, and the removal of the oldest rows (retention).
 *
 * `node_modules/.bin/node bench/views.ts` (BENCH_VIEW_ROWS rows per table, default 130,000).
 */
import type { Json } from "../infra/eventlog/EventStore.ts"
import type { ListQuery, Row, RowChange } from "../infra/eventlog/Projection.ts"
import { compareJson, matches } from "../infra/eventlog/RowOrder.ts"
import { MemoryTables } from "../infra/eventlog/ViewStore.ts"

const ROWS = Number(process.env.BENCH_VIEW_ROWS ?? 130_000)
const PROJECTS = 4

const pad = (i: number) => String(i).padStart(10, "0")
const tables = new MemoryTables(new Map([["executions", ["execution_id"]], ["trigger_events", ["arrival_id"]], ["deliveries", ["delivery_id"]]]))
const changes: Array<RowChange> = []
for (let i = 0; i < ROWS; i++) {
  changes.push({ op: "upsert", table: "executions", row: { execution_id: `exe_${pad(i)}`, project_id: `p${i % PROJECTS}`, status: i % 10 === 1 ? "failed" : "succeeded" } })
  changes.push({
    op: "upsert",
    table: "trigger_events",
    row: { arrival_id: `arr_${pad(i)}`, project_id: `p${i % PROJECTS}`, received_at: `2026-11-26T${pad(i)}`, expires_at: `2026-12-03T${pad(i)}` }
  })
  changes.push({
    op: "upsert",
    table: "deliveries",
    row: { delivery_id: `dlv_${pad(i)}`, endpoint_id: `e${i % 2}`, open: i >= ROWS - 100, source_position: i, queued_at: `2026-11-26T${pad(i)}` }
  })
}
const filled = performance.now()
tables.apply(changes)
const fillMs = performance.now() - filled

/**
 * What a page cost before the ordered index: the rows of the smallest `=` bucket (found by the
 * hash index, here gathered beforehand, outside the timing) filtered, sorted and cut.
 */
const sortedPage = (table: string, query: ListQuery): () => ReadonlyArray<Row> => {
  const all = tables.dump(table)
  const buckets = (query.where ?? []).filter((f) => f.op === "=").map((f) => all.filter((row) => matches(row, f)))
  const bucket = buckets.reduce((smallest, rows) => (rows.length < smallest.length ? rows : smallest), all)
  const sign = query.orderBy[0]?.direction === "desc" ? -1 : 1
  const order = (row: Row) => query.orderBy.map((o) => row[o.column])
  const compare = (a: ReadonlyArray<Json | undefined>, b: ReadonlyArray<Json | undefined>) => {
    for (let i = 0; i < a.length; i++) {
      const c = compareJson(a[i], b[i])
      if (c !== 0) return c * sign
    }
    return 0
  }
  const after = query.after
  return () =>
    bucket
      .filter((row) => (query.where ?? []).every((f) => matches(row, f)) && (after === undefined || compare(order(row), after) > 0))
      .toSorted((a, b) => compare(order(a), order(b)))
      .slice(0, query.limit)
}

const msPer = (f: () => unknown, minMs = 300): number => {
  f()
  let n = 0
  const start = performance.now()
  while (performance.now() - start < minMs) {
    f()
    n++
  }
  return (performance.now() - start) / n
}

const pages: ReadonlyArray<readonly [string, string, ListQuery]> = [
  ["executions, a project's first page", "executions", {
    where: [{ column: "project_id", op: "=", value: "p1" }],
    orderBy: [{ column: "execution_id", direction: "desc" }],
    limit: 101
  }],
  ["executions, failed ones of a project, from a cursor", "executions", {
    where: [{ column: "project_id", op: "=", value: "p1" }, { column: "status", op: "=", value: "failed" }],
    orderBy: [{ column: "execution_id", direction: "desc" }],
    after: [`exe_${pad(Math.floor(ROWS / 2))}`],
    limit: 101
  }],
  ["trigger history, a project's first page", "trigger_events", {
    where: [{ column: "project_id", op: "=", value: "p1" }, { column: "expires_at", op: ">", value: "2026-12-01" }],
    orderBy: [{ column: "received_at", direction: "desc" }, { column: "arrival_id", direction: "desc" }],
    limit: 101
  }],
  ["trigger history sweep, nothing expired", "trigger_events", {
    where: [{ column: "expires_at", op: "<=", value: "2026-12-01" }],
    orderBy: [{ column: "expires_at", direction: "asc" }, { column: "arrival_id", direction: "asc" }],
    limit: 1000
  }],
  ["a lane's open deliveries", "deliveries", {
    where: [{ column: "endpoint_id", op: "=", value: "e1" }, { column: "open", op: "=", value: true }],
    orderBy: [{ column: "source_position", direction: "asc" }, { column: "delivery_id", direction: "asc" }],
    limit: 100
  }]
]

process.stdout.write(`memory views: ${ROWS} rows per table (filled in ${fillMs.toFixed(0)} ms)\n`)
process.stdout.write(`${"page".padEnd(52)} ${"indexed ms".padStart(11)} ${"sorted ms".padStart(10)} ${"ratio".padStart(8)}\n`)
for (const [name, table, query] of pages) {
  const sorted = sortedPage(table, query)
  if (JSON.stringify(tables.list(table, query)) !== JSON.stringify(sorted())) throw new Error(`${name}: the pages differ`)
  const a = msPer(() => tables.list(table, query))
  const b = msPer(sorted, 1_000)
  process.stdout.write(`${name.padEnd(52)} ${a.toFixed(3).padStart(11)} ${b.toFixed(3).padStart(10)} ${`${(b / a).toFixed(0)}x`.padStart(8)}\n`)
}

const APPENDS = 10_000
const appended = performance.now()
for (let i = 0; i < APPENDS; i++) {
  tables.apply([{ op: "upsert", table: "executions", row: { execution_id: `exe_${pad(ROWS + i)}`, project_id: `p${i % PROJECTS}`, status: "succeeded" } }])
}
const appendUs = ((performance.now() - appended) * 1000) / APPENDS
const REMOVED = 20_000
const removing = performance.now()
const removed = tables.removeWhile("executions", (row) => (String(row.execution_id) < `exe_${pad(REMOVED)}` ? true : "stop")).length
const removeUs = ((performance.now() - removing) * 1000) / removed
process.stdout.write(`appends (two ordered and two hash indexes kept): ${appendUs.toFixed(1)} us per row; oldest ${removed} removed: ${removeUs.toFixed(1)} us per row\n`)
