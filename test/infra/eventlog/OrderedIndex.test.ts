/**
 * The memory tables' list pages (a bucket walked in order from its cursor, OrderedIndex.ts)
 * answer what filtering, sorting and cutting the whole table answers, whatever changes came
 * between lists: rows moving between buckets and along the order, deletions, retention's
 * removals of the oldest rows and cleared tables, in both directions, with cursors and with
 * ranges that end a walk early.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Json } from "../../../infra/eventlog/EventStore.ts"
import type { Filter, ListQuery, Row, RowChange } from "../../../infra/eventlog/Projection.ts"
import { compareJson, matches } from "../../../infra/eventlog/RowOrder.ts"
import { MemoryTables } from "../../../infra/eventlog/ViewStore.ts"

const TABLE = "items"
const KEYS = new Map([[TABLE, ["id"]]])
const IDS = Array.from({ length: 12 }, (_, i) => `id-${String(i).padStart(2, "0")}`)
const GROUPS = ["g1", "g2", "g3"]
// Texts whose UTF-16 and UTF-8 orders differ, and a prefix of another.
const TEXTS = ["a", "ab", "b", "\uE000", "\u{1F600}", "é"]

const values = {
  grp: fc.constantFrom<Json>(...GROUPS, null),
  score: fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constant(null)),
  label: fc.constantFrom<Json>(...TEXTS, null),
  open: fc.boolean()
}

const change: fc.Arbitrary<RowChange> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ id: fc.constantFrom(...IDS), ...values }).map((row): RowChange => ({ op: "upsert", table: TABLE, row })) },
  {
    weight: 2,
    arbitrary: fc.record({ id: fc.constantFrom(...IDS), set: fc.record(values, { requiredKeys: [] }) }).map(({ id, set }): RowChange => ({
      op: "update",
      table: TABLE,
      key: { id },
      set
    }))
  },
  { weight: 1, arbitrary: fc.constantFrom(...IDS).map((id): RowChange => ({ op: "delete", table: TABLE, key: { id } })) }
)

const filter: fc.Arbitrary<Filter> = fc.oneof(
  fc.record({ column: fc.constant("grp"), op: fc.constant("=" as const), value: fc.constantFrom<Json>(...GROUPS, null) }),
  fc.record({ column: fc.constant("open"), op: fc.constant("=" as const), value: fc.boolean() }),
  fc.record({ column: fc.constant("score"), op: fc.constantFrom("<", "<=", ">", ">=", "!=", "="), value: fc.integer({ min: -4, max: 4 }) }),
  fc.record({ column: fc.constant("label"), op: fc.constantFrom("<", "<=", ">", ">="), value: fc.constantFrom<Json>(...TEXTS) }),
  fc.record({ column: fc.constant("id"), op: fc.constantFrom("<", ">="), value: fc.constantFrom<Json>(...IDS) })
) as fc.Arbitrary<Filter>

const query: fc.Arbitrary<ListQuery> = fc.record({
  where: fc.array(filter, { maxLength: 2 }),
  columns: fc.constantFrom([], ["score"], ["label"], ["grp", "score"], ["open", "label"]),
  direction: fc.constantFrom("asc" as const, "desc" as const),
  after: fc.option(fc.tuple(fc.oneof(fc.integer({ min: -4, max: 4 }), fc.constantFrom<Json>(...TEXTS, ...GROUPS, true, false, null)), fc.constantFrom<Json>(...IDS, "id-", "id-99")), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 6 }),
  // A range on the first order column, which may end the walk early.
  bound: fc.option(fc.record({ op: fc.constantFrom("<", "<=", ">", ">=" as const), value: fc.oneof(fc.integer({ min: -4, max: 4 }), fc.constantFrom<Json>(...TEXTS, ...GROUPS, ...IDS, true, false)) }), { nil: undefined })
}).map(({ where, columns, direction, after, limit, bound }): ListQuery => ({
  where: bound === undefined ? where : [...where, { column: columns[0] ?? "id", op: bound.op as Filter["op"], value: bound.value }],
  orderBy: [...columns, "id"].map((column) => ({ column, direction })),
  // A cursor names every order column: the first value repeated for the middle ones.
  after: after === undefined ? undefined : [...columns.map(() => after[0]), after[1]],
  limit
}))

/** Filter, sort and cut the whole table: what a list page means. */
const reference = (rows: ReadonlyArray<Row>, q: ListQuery): ReadonlyArray<Row> => {
  const sign = q.orderBy[0]?.direction === "desc" ? -1 : 1
  const compare = (a: ReadonlyArray<Json | undefined>, b: ReadonlyArray<Json | undefined>): number => {
    for (let i = 0; i < q.orderBy.length; i++) {
      const c = compareJson(a[i], b[i])
      if (c !== 0) return c * sign
    }
    return 0
  }
  const order = (row: Row) => q.orderBy.map((o) => row[o.column])
  const after = q.after
  return rows
    .filter((row) => (q.where ?? []).every((f) => matches(row, f)) && (after === undefined || compare(order(row), after) > 0))
    .toSorted((a, b) => compare(order(a), order(b)))
    .slice(0, q.limit)
}

type Step =
  | { readonly change: RowChange }
  | { readonly query: ListQuery }
  | { readonly retain: string }
  | { readonly clear: true }

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 10, arbitrary: change.map((c): Step => ({ change: c })) },
  { weight: 10, arbitrary: query.map((q): Step => ({ query: q })) },
  { weight: 1, arbitrary: fc.constantFrom(...IDS).map((id): Step => ({ retain: id })) },
  { weight: 1, arbitrary: fc.constant<Step>({ clear: true }) }
)

describe("memory table list pages", () => {
  it("answer what sorting the whole table answers, across changes between pages", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 20, maxLength: 80, size: "max" }), (steps) => {
        const tables = new MemoryTables(KEYS)
        for (const s of steps) {
          if ("change" in s) tables.apply([s.change])
          else if ("retain" in s) tables.removeWhile(TABLE, (row) => (String(row.id) < s.retain ? true : "stop"))
          else if ("clear" in s) tables.clear([TABLE])
          else assert.deepStrictEqual(tables.list(TABLE, s.query), reference(tables.dump(TABLE), s.query))
        }
      }),
      { numRuns: 1000, seed: 23 }
    )
  })

  it("page through a large bucket in order, rows arriving and leaving between pages", () => {
    const tables = new MemoryTables(KEYS)
    const rowOf = (i: number): Row => ({ id: `id-${String(i).padStart(6, "0")}`, grp: `g${i % 3}`, score: i % 7, label: null, open: i % 2 === 0 })
    tables.apply(Array.from({ length: 3_000 }, (_, i): RowChange => ({ op: "upsert", table: TABLE, row: rowOf(i) })))
    const q = (after: ReadonlyArray<Json> | undefined): ListQuery => ({
      where: [{ column: "grp", op: "=", value: "g1" }, { column: "open", op: "=", value: true }],
      orderBy: [{ column: "score", direction: "desc" }, { column: "id", direction: "desc" }],
      after,
      limit: 50
    })
    let after: ReadonlyArray<Json> | undefined
    let pages = 0
    let next = 3_000
    while (true) {
      const page = tables.list(TABLE, q(after))
      assert.deepStrictEqual(page, reference(tables.dump(TABLE), q(after)))
      if (page.length === 0) break
      const last = page[page.length - 1]!
      after = [last.score as Json, last.id as Json]
      pages++
      // Between pages: new rows, an old one moved along the order, one closed, one deleted.
      tables.apply([
        { op: "upsert", table: TABLE, row: rowOf(next++) },
        { op: "update", table: TABLE, key: { id: rowOf(pages * 7).id as string }, set: { score: (pages * 5) % 7 } },
        { op: "update", table: TABLE, key: { id: rowOf(pages * 11).id as string }, set: { open: false } },
        { op: "delete", table: TABLE, key: { id: rowOf(pages * 13).id as string } }
      ])
    }
    assert.isAbove(pages, 5)
  })
})

describe("row order", () => {
  it("orders text as UTF-8 bytes, as Postgres's C collation does", () => {
    const text = fc.string({ unit: fc.oneof(fc.constantFrom("a", "b", "\uD7FF", "\uE000", "\uFFFF", "\u{1F600}", "\u{10000}"), fc.string({ unit: "binary", minLength: 1, maxLength: 1 })), maxLength: 6 })
    fc.assert(
      fc.property(text, text, (a, b) => {
        assert.strictEqual(Math.sign(compareJson(a, b)), Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))))
      }),
      { numRuns: 5000, seed: 5 }
    )
  })
})
