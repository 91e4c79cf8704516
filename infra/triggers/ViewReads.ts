/**
 * Rows of a view table by many primary keys at once: the history's page reads the progress of
 * up to 100 arrivals and the current status of each of their deliveries (webhook_deliveries),
 * which on Postgres is one `= ANY($1)` statement per table instead of one query per row. In
 * memory each key is a map lookup. Tables keyed by one text column only.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import { decodeRow, ident, physicalName, specMap } from "../eventlog/PgViewStore.ts"
import { Projections, type Row, type TableSpec } from "../eventlog/Projection.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"

export interface ViewReadsShape {
  /** The rows of `table` whose key is among `keys`, in no particular order; absent keys are skipped. */
  readonly byKeys: (table: string, keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Row>, StoreUnavailable>
}

export class ViewReads extends Context.Service<ViewReads, ViewReadsShape>()("app/infra/triggers/ViewReads") {}

const keyColumn = (specs: ReadonlyMap<string, TableSpec>, table: string): { spec: TableSpec; column: string } => {
  const spec = specs.get(table)
  const column = spec?.primaryKey[0]
  if (spec === undefined || column === undefined || spec.primaryKey.length !== 1) throw new Error(`view table ${table} has no single-column key`)
  return { spec, column }
}

export const layerMemory: Layer.Layer<ViewReads, never, ViewStore | Projections> = Layer.effect(
  ViewReads,
  Effect.gen(function*() {
    const views = yield* ViewStore
    const specs = specMap(yield* Projections)
    return ViewReads.of({
      byKeys: (table, keys) =>
        Effect.suspend(() => {
          const { column } = keyColumn(specs, table)
          return Effect.map(
            Effect.forEach([...new Set(keys)], (key) => views.get(table, { [column]: key })),
            (rows) => rows.filter((row): row is Row => row !== undefined)
          )
        })
    })
  })
)

export const layerPg: Layer.Layer<ViewReads, never, SqlClient.SqlClient | Projections> = Layer.effect(
  ViewReads,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const specs = specMap(yield* Projections)
    return ViewReads.of({
      byKeys: (table, keys) =>
        Effect.suspend(() => {
          if (keys.length === 0) return Effect.succeed([])
          const { spec, column } = keyColumn(specs, table)
          const text = `SELECT * FROM ${ident(physicalName(table))} WHERE ${ident(column)} = ANY($1::text[])`
          return sql.unsafe<Record<string, unknown>>(text, [[...new Set(keys)]]).pipe(
            Effect.map((rows) => rows.map((raw) => decodeRow(spec, raw))),
            Effect.mapError((cause) => new StoreUnavailable({ cause }))
          )
        })
    })
  })
)
