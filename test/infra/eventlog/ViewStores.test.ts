/**
 * The two view stores answer the same reads from the same rows: random filters, orders, limits
 * and keyset pages against the memory tables (the reference semantics) and Postgres.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import type { Json } from "../../../infra/eventlog/EventStore.ts"
import { applyChanges, createTableStatements, layerPgViewStore } from "../../../infra/eventlog/PgViewStore.ts"
import { type Filter, type ListQuery, type Projection, Projections, type Row, type TableSpec } from "../../../infra/eventlog/Projection.ts"
import { MemoryTables, ViewStore } from "../../../infra/eventlog/ViewStore.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

const ITEMS: TableSpec = {
  name: "items",
  columns: { id: "text", grp: "text", score: "bigint", label: "text", flag: "boolean" },
  nullable: ["label"],
  primaryKey: ["id"],
  indexes: [["grp", "-score", "id"]]
}
const projection: Projection = { name: "items", mode: "inline", tables: [ITEMS], streamTypes: [], project: () => [] }

// Texts whose UTF-16 and UTF-8 orders differ (U+E000 against an astral character), case,
// accents, prefixes and the empty string.
const TEXTS = ["", "a", "A", "ab", "a b", "b", "é", "z", "\uE000", "\u{1F600}", "10", "9"]
const GROUPS = ["g1", "g2", "g3"]

const rows: ReadonlyArray<Row> = fc.sample(
  fc.record({
    grp: fc.constantFrom(...GROUPS),
    score: fc.integer({ min: -5, max: 5 }),
    label: fc.option(fc.constantFrom(...TEXTS), { nil: null, freq: 4 }),
    flag: fc.boolean()
  }),
  { numRuns: 120, seed: 42 }
).map((row, i) => ({ id: `item-${String(i).padStart(3, "0")}`, ...row }))

const memory = new MemoryTables(new Map([[ITEMS.name, ITEMS.primaryKey]]))
memory.apply(rows.map((row) => ({ op: "upsert", table: ITEMS.name, row })))

const filter: fc.Arbitrary<Filter> = fc.oneof(
  fc.record({ column: fc.constant("grp"), op: fc.constantFrom("=", "!=", "<", ">="), value: fc.constantFrom<Json>(...GROUPS) }),
  fc.record({ column: fc.constant("score"), op: fc.constantFrom("=", "!=", "<", "<=", ">", ">="), value: fc.integer({ min: -6, max: 6 }) }),
  fc.record({
    column: fc.constant("label"),
    op: fc.constantFrom("=", "!=", "<", "<=", ">", ">="),
    value: fc.oneof(fc.constantFrom<Json>(...TEXTS), fc.constant<Json>(null))
  }),
  fc.record({ column: fc.constant("flag"), op: fc.constantFrom("=", "!="), value: fc.boolean() })
) as fc.Arbitrary<Filter>

const query: fc.Arbitrary<ListQuery> = fc.record({
  where: fc.array(filter, { maxLength: 2 }),
  orderBy: fc.tuple(fc.constantFrom([], ["grp"], ["score"], ["label"], ["flag"], ["grp", "score"]), fc.constantFrom("asc", "desc")).map((
    [columns, direction]
  ) => [...columns, "id"].map((column) => ({ column, direction: direction as "asc" | "desc" }))),
  limit: fc.integer({ min: 1, max: 25 })
})

const normalize = (row: Row): Row => Object.fromEntries(Object.keys(ITEMS.columns).map((c) => [c, row[c] ?? null]))

const Setup = Layer.effectDiscard(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of createTableStatements(ITEMS)) yield* sql.unsafe(statement)
    yield* applyChanges(sql, new Map([[ITEMS.name, ITEMS]]), rows.map((row) => ({ op: "upsert", table: ITEMS.name, row })))
  })
)

const Stores = layerPgViewStore.pipe(
  Layer.provideMerge(Setup),
  Layer.provide(Layer.succeed(Projections, [projection])),
  Layer.provideMerge(freshDatabaseLayer())
)

describe.skipIf(!postgresAvailable)("view stores agree", () => {
  layer(Stores, { timeout: 120_000, excludeTestServices: true })("memory and Postgres", (it) => {
    it.effect("get finds the same rows", () =>
      Effect.gen(function*() {
        const pg = yield* ViewStore
        for (const id of ["item-000", "item-119", "missing"]) {
          const fromPg = yield* pg.get(ITEMS.name, { id })
          const fromMemory = memory.get(ITEMS.name, { id })
          assert.deepStrictEqual(fromPg === undefined ? undefined : normalize(fromPg), fromMemory === undefined ? undefined : normalize(fromMemory))
        }
      }))

    it.effect("list: the same page for any filter, order and limit, and the same keyset pages", () =>
      Effect.gen(function*() {
        const pg = yield* ViewStore
        const run = (q: ListQuery) =>
          Effect.runPromise(Effect.gen(function*() {
            const fromPg = (yield* pg.list(ITEMS.name, q)).map(normalize)
            const fromMemory = memory.list(ITEMS.name, q).map(normalize)
            assert.deepStrictEqual(fromPg, fromMemory, JSON.stringify(q))
            // Every page after the first, following the last row's order values.
            let after = fromPg[fromPg.length - 1]
            let pages = 0
            const everything = memory.list(ITEMS.name, { ...q, limit: 1000 }).map(normalize)
            const seen = [...fromPg]
            while (after !== undefined && pages++ < 200) {
              const last = after
              const next = { ...q, after: q.orderBy.map((o) => last[o.column] ?? null) }
              const page = (yield* pg.list(ITEMS.name, next)).map(normalize)
              assert.deepStrictEqual(page, memory.list(ITEMS.name, next).map(normalize), JSON.stringify(next))
              seen.push(...page)
              after = page[page.length - 1]
            }
            assert.deepStrictEqual(seen, everything, `pages of ${JSON.stringify(q)}`)
          }))
        yield* Effect.promise(() => fc.assert(fc.asyncProperty(query, run), { numRuns: 150 }))
      }))
  })
})
