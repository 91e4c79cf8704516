/**
 * Row changes applied in one batch give the same rows on Postgres (grouped into as few
 * statements as their shapes allow, repeated keys folded) as one by one in the memory tables.
 */
import { assert, describe, it as plainIt, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import type { Json } from "../../../infra/eventlog/EventStore.ts"
import { applyChanges, createTableStatements, groupChanges, physicalName } from "../../../infra/eventlog/PgViewStore.ts"
import type { Row, RowChange, TableSpec } from "../../../infra/eventlog/Projection.ts"
import { MemoryTables } from "../../../infra/eventlog/ViewStore.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

const THINGS: TableSpec = {
  name: "things",
  columns: { id: "text", status: "text", score: "bigint", tags: "jsonb" },
  nullable: ["status", "score", "tags"],
  primaryKey: ["id"]
}
const specs = new Map([[THINGS.name, THINGS]])
const KEYS = ["k0", "k1", "k2", "k3"]

const change: fc.Arbitrary<RowChange> = fc.oneof(
  fc.record({ id: fc.constantFrom(...KEYS), status: fc.constantFrom("pending", "running", "done"), score: fc.integer({ min: 0, max: 9 }) })
    .map((row): RowChange => ({ op: "upsert", table: THINGS.name, row: { ...row, tags: [] } })),
  fc.record({ id: fc.constantFrom(...KEYS), status: fc.constantFrom("pending", "running", "done") })
    .map((row): RowChange => ({ op: "upsert", table: THINGS.name, row })),
  fc.record({ id: fc.constantFrom(...KEYS), score: fc.integer({ min: 0, max: 9 }) })
    .map(({ id, score }): RowChange => ({ op: "update", table: THINGS.name, key: { id }, set: { score } })),
  fc.constantFrom(...KEYS).map((id): RowChange => ({ op: "delete", table: THINGS.name, key: { id } })),
  fc.record({ id: fc.constantFrom(...KEYS), value: fc.constantFrom<Json>("a", "b", 1) })
    .map(({ id, value }): RowChange => ({ op: "append", table: THINGS.name, key: { id }, column: "tags", value }))
)

const normalize = (row: Row): Row => Object.fromEntries(Object.keys(THINGS.columns).map((c) => [c, row[c] ?? null]))
const byId = (a: Row, b: Row) => String(a.id).localeCompare(String(b.id))

describe("grouping row changes", () => {
  plainIt("folds a repeated key of the same shape into one statement", () => {
    const upsert = (id: string, status: string): RowChange => ({ op: "upsert", table: THINGS.name, row: { id, status } })
    // Request and start of two executions in one commit: one upsert, the later rows.
    const groups = groupChanges(specs, [upsert("a", "pending"), upsert("a", "running"), upsert("b", "pending"), upsert("b", "running")])
    assert.strictEqual(groups.length, 1)
    assert.deepStrictEqual(groups[0]!.changes, [upsert("a", "running"), upsert("b", "running")])
    // Appends accumulate, so a repeated key still starts a new statement.
    const append = (id: string): RowChange => ({ op: "append", table: THINGS.name, key: { id }, column: "tags", value: "x" })
    assert.strictEqual(groupChanges(specs, [append("a"), append("a")]).length, 2)
  })

  plainIt("an upsert joins a statement only with exactly its columns, in any key order", () => {
    const upsert = (row: Row): RowChange => ({ op: "upsert", table: THINGS.name, row })
    const count = (...changes: ReadonlyArray<RowChange>) => groupChanges(specs, changes).length
    assert.strictEqual(count(upsert({ id: "a", status: "x" }), upsert({ id: "b", score: 1 })), 2)
    assert.strictEqual(count(upsert({ id: "a", status: "x" }), upsert({ id: "b" })), 2)
    assert.strictEqual(count(upsert({ id: "a" }), upsert({ id: "b", status: "x" })), 2)
    assert.strictEqual(count(upsert({ status: "x", id: "a" }), upsert({ id: "b", status: "y" })), 1)
    const update: RowChange = { op: "update", table: THINGS.name, key: { id: "c" }, set: { status: "x" } }
    assert.strictEqual(count(upsert({ id: "a", status: "x" }), update), 2)
    assert.deepStrictEqual(groupChanges(specs, [upsert({ status: "x", id: "a" })])[0]!.columns, ["id", "status"])
  })
})

describe.skipIf(!postgresAvailable)("row changes on Postgres", () => {
  const Setup = Layer.effectDiscard(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    for (const statement of createTableStatements(THINGS)) yield* sql.unsafe(statement)
  }))
  layer(Layer.provideMerge(Setup, freshDatabaseLayer()), { timeout: 120_000, excludeTestServices: true })("memory and Postgres", (it) => {
    it.effect("a batch leaves the same rows as the memory tables", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const table = physicalName(THINGS.name)
        const run = (changes: ReadonlyArray<RowChange>) =>
          Effect.runPromise(Effect.gen(function*() {
            yield* sql.unsafe(`DELETE FROM "${table}"`)
            yield* sql.withTransaction(applyChanges(sql, specs, changes))
            const memory = new MemoryTables(new Map([[THINGS.name, THINGS.primaryKey]]))
            memory.apply(changes)
            const fromMemory = memory.list(THINGS.name, { orderBy: [{ column: "id", direction: "asc" }], limit: 100 }).map(normalize)
            const raw = yield* sql.unsafe<Record<string, unknown>>(`SELECT id, status, score, tags FROM "${table}" ORDER BY id COLLATE "C"`)
            const fromPg = raw.map((r) => normalize({
              id: r.id as Json,
              status: (r.status ?? null) as Json,
              score: r.score === null || r.score === undefined ? null : Number(r.score),
              tags: typeof r.tags === "string" ? JSON.parse(r.tags) as Json : (r.tags ?? null) as Json
            }))
            assert.deepStrictEqual(fromPg.toSorted(byId), fromMemory.toSorted(byId), JSON.stringify(changes))
          }).pipe(Effect.provideService(SqlClient.SqlClient, sql)))
        yield* Effect.promise(() => fc.assert(fc.asyncProperty(fc.array(change, { maxLength: 12 }), run), { numRuns: 150 }))
      }))
  })
})
