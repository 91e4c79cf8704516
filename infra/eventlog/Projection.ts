/**
 * Projections: pure functions from recorded events to row changes, declared once with the tables
 * they write. The same declaration runs on the memory view store and on Postgres; inline
 * projections are applied inside the append's own commit, async ones by a checkpointed runner.
 */
import { Context } from "effect"
import type { Json, RecordedEvent } from "./EventStore.ts"

export type ColumnType = "text" | "bigint" | "boolean" | "jsonb"

export type Value = Json | undefined
export type Row = { readonly [column: string]: Value }

export interface TableSpec {
  /** Logical name, e.g. `executions`; Postgres prefixes it with `v_`. */
  readonly name: string
  readonly columns: { readonly [column: string]: ColumnType }
  /** Columns that may hold null; all others are NOT NULL. */
  readonly nullable?: ReadonlyArray<string>
  readonly primaryKey: ReadonlyArray<string>
  /** Secondary indexes, each a column list (a leading `-` on a column means descending). */
  readonly indexes?: ReadonlyArray<ReadonlyArray<string>>
  /**
   * Memory mode only (MemoryRetention.ts): rows that may be dropped once older than the retention
   * window, with the stream each row was projected from. Postgres keeps everything.
   */
  readonly retention?: Retention
}

export interface Retention {
  /**
   * When the row was made, in milliseconds since the epoch: rows are visited in the order they
   * were made, and the sweep stops at the first one younger than the window.
   */
  readonly since: (row: Row) => number
  /** Only finished rows go: a running execution or an open delivery stays, however old. */
  readonly finished: (row: Row) => boolean
  /**
   * When a finished row finished, where that can be well after it was made (an execution that
   * ran for an hour): it stays until that too is older than the window. Undefined: `since`.
   */
  readonly finishedAt?: (row: Row) => number
  /** The stream the row comes from; its events go with it. */
  readonly stream: (row: Row) => string
  /**
   * The stream the row's record is shown with, where that is another (a trigger delivery's
   * arrival): the row stays while that stream is held (`holds`), so a trigger event's history
   * keeps every target's delivery for as long as it keeps the event.
   */
  readonly source?: (row: Row) => string | undefined
  /**
   * Rows of this table that hold a stream: while one is there, that stream stays, and so do the
   * rows of every table made from it (`stream` or `source`). An open delivery holds the
   * execution or arrival it will send, however long it waits for its turn.
   */
  readonly holds?: { readonly query: ListQuery; readonly stream: (row: Row) => string }
  /** Other streams of these types whose last event is older than the window go too. */
  readonly alsoStreams?: ReadonlyArray<{ readonly streamType: string; readonly minimumAgeMs: number }>
}

export type RowChange =
  /** Insert, or replace every given column of an existing row. */
  | { readonly op: "upsert"; readonly table: string; readonly row: Row }
  /** Set columns of an existing row; nothing happens when the row is absent. */
  | { readonly op: "update"; readonly table: string; readonly key: Row; readonly set: Row }
  | { readonly op: "delete"; readonly table: string; readonly key: Row }
  /** Append `value` to the jsonb array in `column` of an existing row. */
  | { readonly op: "append"; readonly table: string; readonly key: Row; readonly column: string; readonly value: Json }

export interface Projection {
  readonly name: string
  /** Inline: updated in the append's own commit (views read right after a write). */
  readonly mode: "inline" | "async"
  readonly tables: ReadonlyArray<TableSpec>
  /** Stream types whose events the projection reads; others are skipped without a call. */
  readonly streamTypes: ReadonlyArray<string>
  /**
   * An inline projection reads the event's stream, version, type and data, never its `position`
   * or `createdAt`: on Postgres the changes are computed before the commit that assigns them.
   */
  readonly project: (event: RecordedEvent) => ReadonlyArray<RowChange>
}

/** The projections this process runs, provided once by the composition root. */
export class Projections extends Context.Service<Projections, ReadonlyArray<Projection>>()("app/infra/Projections") {}

export const tableSpec = (projections: ReadonlyArray<Projection>, table: string): TableSpec | undefined => {
  for (const projection of projections) {
    for (const spec of projection.tables) if (spec.name === table) return spec
  }
  return undefined
}

/** The changes a projection makes for a batch of events, in order. */
export const projectAll = (projection: Projection, events: ReadonlyArray<RecordedEvent>): ReadonlyArray<RowChange> => {
  const changes: Array<RowChange> = []
  for (const event of events) {
    if (!projection.streamTypes.includes(event.streamType)) continue
    for (const change of projection.project(event)) changes.push(change)
  }
  return changes
}

export type FilterOp = "=" | "!=" | "<" | "<=" | ">" | ">="

export interface Filter {
  readonly column: string
  readonly op: FilterOp
  readonly value: Json
}

export interface Order {
  readonly column: string
  readonly direction: "asc" | "desc"
}

export interface ListQuery {
  readonly where?: ReadonlyArray<Filter>
  /** Keyset order; the last column must make rows unique. */
  readonly orderBy: ReadonlyArray<Order>
  /** Values of the `orderBy` columns of the last row of the previous page. */
  readonly after?: ReadonlyArray<Json> | undefined
  readonly limit: number
}
