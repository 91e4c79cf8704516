/**
 * The memory tables' hash indexes (built at a table's first `=` list, then kept with every
 * change) answer exactly what a table indexed afresh answers, whatever changes came between.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Json } from "../../../infra/eventlog/EventStore.ts"
import type { ListQuery, Row, RowChange } from "../../../infra/eventlog/Projection.ts"
import { MemoryTables } from "../../../infra/eventlog/ViewStore.ts"

const TABLE = "items"
const KEYS = new Map([[TABLE, ["id"]]])
const IDS = ["a", "b", "c", "d", "e", "f"]
const GROUPS = ["g1", "g2", "g3"]

const row = fc.record({
  id: fc.constantFrom(...IDS),
  grp: fc.constantFrom<Json>(...GROUPS, null),
  flag: fc.boolean()
})

const change: fc.Arbitrary<RowChange> = fc.oneof(
  row.map((r): RowChange => ({ op: "upsert", table: TABLE, row: r })),
  fc.record({ id: fc.constantFrom(...IDS), grp: fc.constantFrom<Json>(...GROUPS, null) }).map((r): RowChange => ({
    op: "update",
    table: TABLE,
    key: { id: r.id },
    set: { grp: r.grp }
  })),
  fc.record({ id: fc.constantFrom(...IDS), flag: fc.boolean() }).map((r): RowChange => ({ op: "update", table: TABLE, key: { id: r.id }, set: { flag: r.flag } })),
  fc.constantFrom(...IDS).map((id): RowChange => ({ op: "delete", table: TABLE, key: { id } }))
)

const query: fc.Arbitrary<ListQuery> = fc.record({
  where: fc.array(
    fc.oneof(
      fc.record({ column: fc.constant("grp"), op: fc.constant("=" as const), value: fc.constantFrom<Json>(...GROUPS, null) }),
      fc.record({ column: fc.constant("flag"), op: fc.constant("=" as const), value: fc.boolean() })
    ),
    { maxLength: 2 }
  ),
  orderBy: fc.constant([{ column: "id", direction: "asc" as const }]),
  limit: fc.constant(100)
})

const fresh = (tables: MemoryTables): MemoryTables => {
  const copy = new MemoryTables(KEYS)
  copy.apply(tables.dump(TABLE).map((r: Row): RowChange => ({ op: "upsert", table: TABLE, row: r })))
  return copy
}

describe("memory tables", () => {
  it("keep their equality indexes current across upserts, updates and deletes", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(change.map((c) => ({ change: c })), query.map((q) => ({ query: q }))), { maxLength: 40 }), (steps) => {
        const tables = new MemoryTables(KEYS)
        for (const step of steps) {
          if ("change" in step) tables.apply([step.change])
          else assert.deepStrictEqual(tables.list(TABLE, step.query), fresh(tables).list(TABLE, step.query))
        }
        for (const grp of [...GROUPS, null]) {
          const q: ListQuery = { where: [{ column: "grp", op: "=", value: grp }], orderBy: [{ column: "id", direction: "asc" }], limit: 100 }
          const expected = tables.dump(TABLE).filter((r) => grp !== null && r.grp === grp)
          assert.deepStrictEqual(tables.list(TABLE, q), expected)
        }
      }),
      { numRuns: 300, seed: 7 }
    )
  })

  it("apply a batch as they apply its changes one by one, runs of upserts of one row included", () => {
    // Upserts of one id in a row, each with some of the columns: written once, merged in order.
    const run = fc.tuple(
      fc.constantFrom(...IDS),
      fc.array(fc.record({ grp: fc.constantFrom<Json>(...GROUPS, null), flag: fc.boolean() }, { requiredKeys: [] }), { minLength: 1, maxLength: 4 })
    ).map(([id, rows]) => rows.map((r): RowChange => ({ op: "upsert", table: TABLE, row: { id, ...r } })))
    const batch = fc.array(fc.oneof(change.map((c) => [c]), run), { maxLength: 6 }).map((parts) => parts.flat())
    fc.assert(
      fc.property(fc.array(batch, { maxLength: 8 }), (batches) => {
        const together = new MemoryTables(KEYS)
        const oneByOne = new MemoryTables(KEYS)
        const lists: ReadonlyArray<ListQuery> = [...GROUPS, null].map((grp) => ({
          where: [{ column: "grp", op: "=", value: grp }],
          orderBy: [{ column: "id", direction: "asc" }],
          limit: 100
        }))
        // Listed first, so both keep their indexes through the changes.
        for (const q of lists) assert.deepStrictEqual(together.list(TABLE, q), oneByOne.list(TABLE, q))
        for (const changes of batches) {
          together.apply(changes)
          for (const c of changes) oneByOne.apply([c])
          assert.deepStrictEqual(together.dump(TABLE), oneByOne.dump(TABLE))
          for (const q of lists) assert.deepStrictEqual(together.list(TABLE, q), oneByOne.list(TABLE, q))
        }
      }),
      { numRuns: 300, seed: 11 }
    )
  })

  it("forgets a cleared table's indexes", () => {
    const tables = new MemoryTables(KEYS)
    const q: ListQuery = { where: [{ column: "grp", op: "=", value: "g1" }], orderBy: [{ column: "id", direction: "asc" }], limit: 10 }
    tables.apply([{ op: "upsert", table: TABLE, row: { id: "a", grp: "g1" } }])
    assert.strictEqual(tables.list(TABLE, q).length, 1)
    tables.clear([TABLE])
    assert.strictEqual(tables.list(TABLE, q).length, 0)
    tables.apply([{ op: "upsert", table: TABLE, row: { id: "b", grp: "g1" } }])
    assert.deepStrictEqual(tables.list(TABLE, q).map((r) => r.id), ["b"])
  })
})
