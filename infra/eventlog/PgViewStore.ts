/**
 * Projected views on Postgres: DDL from table specs, row changes applied as a few set-based
 * statements per batch, and keyset-paginated reads. Physical tables are `v_<name>`; a replay
 * builds `v_<name>__<suffix>` and renames it into place.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type Json, StoreUnavailable } from "./EventStore.ts"
import type { ColumnType, ListQuery, Row, RowChange, TableSpec } from "./Projection.ts"
import { Projections } from "./Projection.ts"
import { ViewStore } from "./ViewStore.ts"

export const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`
export const physicalName = (table: string, suffix = ""): string => `v_${table}${suffix === "" ? "" : `__${suffix}`}`

const sqlType: Record<ColumnType, string> = { text: "text COLLATE \"C\"", bigint: "bigint", boolean: "boolean", jsonb: "jsonb" }
const arrayType: Record<ColumnType, string> = { text: "text[]", bigint: "int8[]", boolean: "bool[]", jsonb: "text[]" }
const castBack = (type: ColumnType, expr: string) => (type === "jsonb" ? `${expr}::jsonb` : expr)

export const createTableStatements = (spec: TableSpec, suffix = ""): ReadonlyArray<string> => {
  const table = physicalName(spec.name, suffix)
  const nullable = new Set(spec.nullable ?? [])
  const columns = Object.entries(spec.columns).map(([column, type]) =>
    `${ident(column)} ${sqlType[type]}${nullable.has(column) ? "" : " NOT NULL"}`
  )
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${ident(table)} (${columns.join(", ")}, PRIMARY KEY (${spec.primaryKey.map(ident).join(", ")}))`
  ]
  for (const [i, index] of (spec.indexes ?? []).entries()) {
    const cols = index.map((c) => (c.startsWith("-") ? `${ident(c.slice(1))} DESC` : ident(c)))
    statements.push(`CREATE INDEX IF NOT EXISTS ${ident(`${table}_i${i}`)} ON ${ident(table)} (${cols.join(", ")})`)
  }
  return statements
}

const encodeValue = (type: ColumnType, value: Row[string]): unknown => {
  if (value === undefined || value === null) return null
  if (type === "jsonb") return JSON.stringify(value)
  if (type === "bigint") return typeof value === "number" ? BigInt(Math.trunc(value)) : value
  return value
}

const decodeValue = (type: ColumnType | undefined, value: unknown): Json => {
  if (value === null || value === undefined) return null
  if (typeof value === "bigint") return Number(value)
  if (value instanceof Date) return value.getTime()
  if (type === "jsonb" && typeof value === "string") return JSON.parse(value) as Json
  return value as Json
}

export const decodeRow = (spec: TableSpec, raw: Record<string, unknown>): Row => {
  const row: Record<string, Json> = {}
  for (const column of Object.keys(spec.columns)) row[column] = decodeValue(spec.columns[column], raw[column])
  return row
}

interface Group {
  readonly op: RowChange["op"]
  readonly table: string
  readonly columns: ReadonlyArray<string>
  readonly changes: Array<RowChange>
  /** Primary key (JSON) -> index in `changes`. */
  readonly keys: Map<string, number>
}

const changeColumns = (change: RowChange): ReadonlyArray<string> => {
  switch (change.op) {
    case "upsert":
      return Object.keys(change.row).toSorted()
    case "update":
      return [...Object.keys(change.key), ...Object.keys(change.set)].toSorted()
    case "delete":
      return Object.keys(change.key).toSorted()
    case "append":
      return [...Object.keys(change.key), change.column].toSorted()
  }
}

/** Whether `row`'s own keys are exactly `columns` (distinct): no sorted copy, no joined string. */
const hasExactly = (row: Row, columns: ReadonlyArray<string>): boolean => {
  let count = 0
  for (const key in row) if (Object.hasOwn(row, key)) count++
  if (count !== columns.length) return false
  for (const column of columns) if (!Object.hasOwn(row, column)) return false
  return true
}

const sameColumns = (a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean =>
  a.length === b.length && a.every((column, i) => column === b[i])

/** Whether `change` may join `group`'s statement: same kind of change to the same columns. */
const fits = (group: Group, change: RowChange): boolean => {
  if (group.op !== change.op || group.table !== change.table) return false
  // The usual change, an upsert, is checked without allocating.
  if (change.op === "upsert") return hasExactly(change.row, group.columns)
  return sameColumns(changeColumns(change), group.columns) &&
    (change.op !== "append" || (group.changes[0] as { column: string }).column === change.column)
}

const changeKey = (spec: TableSpec, change: RowChange): string => {
  const source = change.op === "upsert" ? change.row : change.key
  return JSON.stringify(spec.primaryKey.map((c) => source[c] ?? null))
}

/**
 * Consecutive changes of the same shape go into one statement. A key repeated within a group
 * replaces its earlier change when that is what applying both would leave (an upsert or update
 * of the same columns, a second delete); a repeated `append` starts a new statement. A batch of
 * executions whose request and start commit together is then one upsert, not one per execution.
 */
export const groupChanges = (specs: ReadonlyMap<string, TableSpec>, changes: ReadonlyArray<RowChange>): ReadonlyArray<Group> => {
  const groups: Array<Group> = []
  let current: Group | undefined
  for (const change of changes) {
    const spec = specs.get(change.table)
    if (spec === undefined) throw new Error(`unknown view table ${change.table}`)
    const key = changeKey(spec, change)
    const sameShape = current !== undefined && fits(current, change)
    const earlier = sameShape ? current?.keys.get(key) : undefined
    if (current !== undefined && earlier !== undefined && change.op !== "append") {
      current.changes[earlier] = change
      continue
    }
    if (current === undefined || !sameShape || earlier !== undefined) {
      current = { op: change.op, table: change.table, columns: changeColumns(change), changes: [], keys: new Map() }
      groups.push(current)
    }
    current.keys.set(key, current.changes.length)
    current.changes.push(change)
  }
  return groups
}

const unnestSource = (spec: TableSpec, columns: ReadonlyArray<string>, rows: ReadonlyArray<Row>, params: Array<unknown>) => {
  const parts = columns.map((column) => {
    const type = spec.columns[column]
    if (type === undefined) throw new Error(`unknown column ${spec.name}.${column}`)
    const values = rows.map((row) => encodeValue(type, row[column]))
    // The driver infers an array parameter's type from its elements and refuses all-null arrays.
    if (values.every((value) => value === null)) return `array_fill(NULL::${arrayType[type].slice(0, -2)}, ARRAY[${values.length}])`
    params.push(values)
    return `$${params.length}::${arrayType[type]}`
  })
  const select = columns.map((column) => `${castBack(spec.columns[column]!, `u.${ident(column)}`)} AS ${ident(column)}`)
  return `(SELECT ${select.join(", ")} FROM unnest(${parts.join(", ")}) AS u(${columns.map(ident).join(", ")}))`
}

/** One statement per group; `params` may already hold the parameters of an enclosing statement. */
const groupStatement = (spec: TableSpec, table: string, group: Group, params: Array<unknown> = []): { text: string; params: Array<unknown> } => {
  const t = ident(table)
  const pkMatch = spec.primaryKey.map((c) => `t.${ident(c)} = s.${ident(c)}`).join(" AND ")
  switch (group.op) {
    case "upsert": {
      const rows = group.changes.map((c) => (c as Extract<RowChange, { op: "upsert" }>).row)
      const source = unnestSource(spec, group.columns, rows, params)
      const updates = group.columns.filter((c) => !spec.primaryKey.includes(c))
      const onConflict = updates.length === 0
        ? "DO NOTHING"
        : `DO UPDATE SET ${updates.map((c) => `${ident(c)} = EXCLUDED.${ident(c)}`).join(", ")}`
      return {
        text: `INSERT INTO ${t} (${group.columns.map(ident).join(", ")}) SELECT * FROM ${source} s ON CONFLICT (${spec.primaryKey.map(ident).join(", ")}) ${onConflict}`,
        params
      }
    }
    case "update": {
      const rows = group.changes.map((c) => {
        const u = c as Extract<RowChange, { op: "update" }>
        return { ...u.set, ...u.key }
      })
      const source = unnestSource(spec, group.columns, rows, params)
      const sets = group.columns.filter((c) => !spec.primaryKey.includes(c))
      return {
        text: `UPDATE ${t} AS t SET ${sets.map((c) => `${ident(c)} = s.${ident(c)}`).join(", ")} FROM ${source} s WHERE ${pkMatch}`,
        params
      }
    }
    case "delete": {
      const rows = group.changes.map((c) => (c as Extract<RowChange, { op: "delete" }>).key)
      const source = unnestSource(spec, group.columns, rows, params)
      return { text: `DELETE FROM ${t} AS t USING ${source} s WHERE ${pkMatch}`, params }
    }
    case "append": {
      const column = (group.changes[0] as Extract<RowChange, { op: "append" }>).column
      const rows = group.changes.map((c) => {
        const a = c as Extract<RowChange, { op: "append" }>
        return { ...a.key, [a.column]: [a.value] }
      })
      const source = unnestSource(spec, group.columns, rows, params)
      return {
        text: `UPDATE ${t} AS t SET ${ident(column)} = coalesce(t.${ident(column)}, '[]'::jsonb) || s.${ident(column)} FROM ${source} s WHERE ${pkMatch}`,
        params
      }
    }
  }
}

/** Applies row changes in order, in the caller's transaction. */
export const applyChanges = (
  sql: SqlClient.SqlClient,
  specs: ReadonlyMap<string, TableSpec>,
  changes: ReadonlyArray<RowChange>,
  suffix = ""
): Effect.Effect<void, SqlError> =>
  Effect.suspend(() => {
    if (changes.length === 0) return Effect.void
    const statements = groupChanges(specs, changes).map((group) => {
      const spec = specs.get(group.table)!
      return groupStatement(spec, physicalName(group.table, suffix), group)
    })
    return Effect.forEach(statements, (s) => sql.unsafe(s.text, s.params), { discard: true })
  })

/**
 * The changes as data-modifying CTE bodies of one enclosing statement, numbering their
 * parameters after those already in `params`; undefined when a table would be changed by two
 * of them (one statement may not change a row twice).
 */
export const changeCtes = (
  specs: ReadonlyMap<string, TableSpec>,
  changes: ReadonlyArray<RowChange>,
  params: Array<unknown>
): ReadonlyArray<string> | undefined => {
  const groups = groupChanges(specs, changes)
  if (new Set(groups.map((group) => group.table)).size !== groups.length) return undefined
  return groups.map((group) => groupStatement(specs.get(group.table)!, physicalName(group.table), group, params).text)
}

export const specMap = (projections: Projections["Service"]): ReadonlyMap<string, TableSpec> => {
  const map = new Map<string, TableSpec>()
  for (const projection of projections) for (const table of projection.tables) map.set(table.name, table)
  return map
}

const OPS = new Set(["=", "!=", "<", "<=", ">", ">="])

/** Any value of the type: it only fills the place of a null that the IS NULL key already sorted. */
const NULL_STAND_IN: Record<ColumnType, string> = { text: "''", bigint: "0", boolean: "false", jsonb: "'null'::jsonb" }

export const listStatement = (spec: TableSpec, query: ListQuery): { text: string; params: Array<unknown> } => {
  const params: Array<unknown> = []
  const typed = (column: string, value: Json) => {
    const type = spec.columns[column]
    if (type === undefined) throw new Error(`unknown column ${spec.name}.${column}`)
    params.push(encodeValue(type, value))
    return `$${params.length}::${type === "jsonb" ? "jsonb" : type === "text" ? "text" : type}`
  }
  const conditions = (query.where ?? []).map((f) => {
    if (!OPS.has(f.op)) throw new Error(`bad operator ${f.op}`)
    return f.op === "!="
      ? `${ident(f.column)} IS DISTINCT FROM ${typed(f.column, f.value)}`
      : `${ident(f.column)} ${f.op} ${typed(f.column, f.value)}`
  })
  const desc = query.orderBy[0]?.direction !== "asc"
  // A nullable column sorts by (is null, value): nulls after every value ascending, as the memory
  // tables do, and the keyset comparison never meets a NULL (which would end the pages early).
  const nullable = new Set(spec.nullable ?? [])
  const keys = (column: string, value: (expr: string) => string) =>
    nullable.has(column)
      ? [`(${value(ident(column))} IS NULL)`, `coalesce(${value(ident(column))}, ${NULL_STAND_IN[spec.columns[column] ?? "text"]})`]
      : [value(ident(column))]
  if (query.after !== undefined) {
    const after = query.after
    const lhs = query.orderBy.flatMap((o) => keys(o.column, (expr) => expr)).join(", ")
    const rhs = query.orderBy.flatMap((o, i) => {
      const placeholder = typed(o.column, after[i] ?? null)
      return keys(o.column, () => placeholder)
    }).join(", ")
    conditions.push(`(${lhs}) ${desc ? "<" : ">"} (${rhs})`)
  }
  params.push(query.limit)
  const order = query.orderBy.flatMap((o) => keys(o.column, (expr) => expr)).map((key) => `${key} ${desc ? "DESC" : "ASC"}`).join(", ")
  return {
    text: `SELECT * FROM ${ident(physicalName(spec.name))}${conditions.length ? ` WHERE ${conditions.join(" AND ")}` : ""} ORDER BY ${order} LIMIT $${params.length}`,
    params
  }
}

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

export const layerPgViewStore: Layer.Layer<ViewStore, never, SqlClient.SqlClient | Projections> = Layer.effect(
  ViewStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const specs = specMap(yield* Projections)
    const specOf = (table: string) => {
      const spec = specs.get(table)
      if (spec === undefined) throw new Error(`unknown view table ${table}`)
      return spec
    }
    return ViewStore.of({
      get: (table, key) =>
        Effect.suspend(() => {
          const spec = specOf(table)
          const where = spec.primaryKey.map((c) => ({ column: c, op: "=" as const, value: (key[c] ?? null) as Json }))
          const { text, params } = listStatement(spec, { where, orderBy: [{ column: spec.primaryKey[0]!, direction: "asc" }], limit: 1 })
          return Effect.map(sql.unsafe<Record<string, unknown>>(text, params), (rows) =>
            rows[0] === undefined ? undefined : decodeRow(spec, rows[0]))
        }).pipe(Effect.mapError(unavailable)),
      list: (table, query) =>
        Effect.suspend(() => {
          const spec = specOf(table)
          const { text, params } = listStatement(spec, query)
          return Effect.map(sql.unsafe<Record<string, unknown>>(text, params), (rows) => rows.map((r) => decodeRow(spec, r)))
        }).pipe(Effect.mapError(unavailable))
    })
  })
)
