/**
 * `secrets reseal`: the second step of a secret key rotation (docs/operations.md). Every process
 * already runs with the new key as SERVICE_SECRET_KEY and the old one as
 * SERVICE_SECRET_KEY_PREVIOUS; this re-seals, under the new key, every value the old key sealed:
 * webhook signing secrets, connection credentials, sealed execution inputs, the idempotency key,
 * the key check value (last), and whatever else a feature seals (found by the sealed format, not by a list of fields, so a
 * feature that starts sealing something is covered without a change here). After it reports no
 * value left under the old key, SERVICE_SECRET_KEY_PREVIOUS can be removed.
 *
 * The event log is rewritten in place, in batches, under the log's one exception to
 * append-only (migration 720_events_reseal_in_place): the same plaintext under another key
 * changes no fact. Views and other tables are rewritten row by row. The running service keeps
 * serving meanwhile: it opens values under either key.
 */
import { Effect } from "effect"
import { Command } from "effect/cli"
import { SqlClient } from "effect/sql"
import { KEY_CHECK_TABLE } from "../../infra/access/KeyCheck.ts"
import { describeProcesses, processesWithoutKey } from "../../infra/access/KeyHolders.ts"
import { keyRing, type KeyRing, SEALED } from "../../infra/access/Secrets.ts"
import { fail, print, withDatabase } from "./Shared.ts"

interface Tally {
  resealed: number
  current: number
  unreadable: number
}

const addTally = (into: Tally, from: Tally) => {
  into.resealed += from.resealed
  into.current += from.current
  into.unreadable += from.unreadable
}

/** `value` with every sealed string re-sealed under the current key; counts what it saw. */
const resealJson = (value: unknown, ring: KeyRing, tally: Tally): unknown => {
  if (typeof value === "string") {
    if (!SEALED.test(value)) return value
    const result = ring.reseal(value)
    if (result._tag === "Current") tally.current++
    else if (result._tag === "Unreadable") tally.unreadable++
    else {
      tally.resealed++
      return result.sealed
    }
    return value
  }
  if (Array.isArray(value)) return value.map((item) => resealJson(item, ring, tally))
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = resealJson(item, ring, tally)
    return out
  }
  return value
}

const BATCH = 500

const parsed = (data: unknown): unknown => (typeof data === "string" ? JSON.parse(data) : data)

/** The event log, in feed order, a batch per transaction. */
const resealEvents = (sql: SqlClient.SqlClient, ring: KeyRing, tally: Tally) =>
  Effect.gen(function*() {
    let after = { tx: "0", seq: 0n as bigint | number }
    let rewritten = 0
    while (true) {
      const rows = yield* sql<{ tx: string; seq: bigint | number; stream_id: string; stream_version: number; data: unknown }>`
        SELECT tx_id::text AS tx, global_position AS seq, stream_id, stream_version, data FROM events
        WHERE (tx_id, global_position) > (${after.tx}::xid8, ${after.seq}) AND data::text LIKE '%"v1.%'
        ORDER BY tx_id, global_position LIMIT ${BATCH}`
      const last = rows[rows.length - 1]
      if (last === undefined) return rewritten
      after = { tx: last.tx, seq: last.seq }
      const changed = rows.flatMap((row) => {
        const before = tally.resealed
        const data = resealJson(parsed(row.data), ring, tally)
        return tally.resealed > before ? [{ row, data }] : []
      })
      if (changed.length === 0) continue
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`SELECT set_config('service.resealing', 'on', true)`
        for (const { row, data } of changed) {
          yield* sql`UPDATE events SET data = ${JSON.stringify(data)}::jsonb
            WHERE stream_id = ${row.stream_id} AND stream_version = ${row.stream_version}`
        }
      }))
      rewritten += changed.length
    }
  })

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`

/**
 * Every other table of the schema with text or JSON columns: views, feature tables, and the key
 * check last (and not at all after a row changed under the scan). A run stopped part way (a
 * crash, a ^C) then leaves the check value under the old key while anything else may still be,
 * so the new key alone is refused at start (KeyCheck.ts) rather than failing deliveries and
 * connections one by one.
 */
const resealTables = (sql: SqlClient.SqlClient, ring: KeyRing, tally: Tally) =>
  Effect.gen(function*() {
    const columns = yield* sql<{ table_name: string; column_name: string; data_type: string }>`
      SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
      JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('text', 'character varying', 'jsonb', 'json')
        AND c.table_name NOT IN ('events', 'schema_migrations')
      ORDER BY c.table_name = ${KEY_CHECK_TABLE}, c.table_name, c.ordinal_position`
    const byTable = Map.groupBy(columns, (column) => column.table_name)
    let rows = 0
    let moved = 0
    for (const [table, cols] of byTable) {
      // A row that changed under the scan may still hold a value under the old key: the check
      // value stays under it too until a run completes, so the new key alone is still refused.
      if (table === KEY_CHECK_TABLE && moved > 0) break
      const rewritten = new Set<string>()
      const select = cols.map((c) => `${ident(c.column_name)}::text AS ${ident(c.column_name)}`).join(", ")
      const where = cols.map((c) => `${ident(c.column_name)}::text LIKE '%v1.%'`).join(" OR ")
      let after = "(0,0)"
      while (true) {
        const found = yield* sql.unsafe<Record<string, string | null>>(
          `SELECT ctid::text AS ctid__, ${select} FROM ${ident(table)} WHERE ctid > $1::tid AND (${where}) ORDER BY ctid LIMIT ${BATCH}`,
          [after]
        )
        const last = found[found.length - 1]
        if (last === undefined) break
        after = String(last.ctid__)
        for (const row of found) {
          // An UPDATE writes the row anew further along the table: the scan meets it again.
          if (rewritten.has(String(row.ctid__))) continue
          // The row's own count joins the total only once its write lands (or it had nothing to write).
          const seen: Tally = { resealed: 0, current: 0, unreadable: 0 }
          const changes: Array<{ readonly column: string; readonly cast: string; readonly value: string }> = []
          for (const column of cols) {
            const text = row[column.column_name]
            if (text === null || text === undefined || !text.includes("v1.")) continue
            const json = column.data_type === "jsonb" || column.data_type === "json"
            const before = seen.resealed
            const next = json ? JSON.stringify(resealJson(JSON.parse(text), ring, seen)) : resealJson(text, ring, seen)
            if (seen.resealed > before) changes.push({ column: column.column_name, cast: json ? `::${column.data_type}` : "", value: String(next) })
          }
          if (changes.length === 0) {
            addTally(tally, seen)
            continue
          }
          const assignments = changes.map((change, i) => `${ident(change.column)} = $${i + 1}${change.cast}`).join(", ")
          const updated = yield* sql.unsafe<{ ctid: string }>(
            `UPDATE ${ident(table)} SET ${assignments} WHERE ctid = $${changes.length + 1}::tid RETURNING ctid::text AS ctid`,
            [...changes.map((change) => change.value), String(row.ctid__)]
          )
          // A row the running service rewrote meanwhile was written under the current key.
          if (updated[0] === undefined) moved++
          else {
            rows += changes.length
            rewritten.add(updated[0].ctid)
            addTally(tally, seen)
          }
        }
      }
    }
    return { rows, moved }
  })

const reseal = Command.make("reseal", {}, () =>
  withDatabase(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const ring = yield* keyRing
      // Re-sealing while a running process lacks the new key would leave it opening nothing.
      const stale = yield* processesWithoutKey(sql, ring.ids[0] ?? "")
      if (stale.length > 0) {
        const named = describeProcesses(stale)
        return yield* fail(
          `${stale.length} running ${stale.length === 1 ? "process does" : "processes do"} not hold SERVICE_SECRET_KEY (${named}): restart ${stale.length === 1 ? "it" : "them"} with the new key as SERVICE_SECRET_KEY and the old one as SERVICE_SECRET_KEY_PREVIOUS first; nothing was re-sealed`
        )
      }
      const tally: Tally = { resealed: 0, current: 0, unreadable: 0 }
      const events = yield* resealEvents(sql, ring, tally)
      const tables = yield* resealTables(sql, ring, tally)
      // Not done: one line on stderr, nothing on stdout, exit 1, like any failed operator command.
      const counts = `re-sealed ${tally.resealed} values; ${tally.current} were already under SERVICE_SECRET_KEY`
      if (tally.unreadable > 0) {
        return yield* fail(`${tally.unreadable} sealed values open under neither SERVICE_SECRET_KEY nor SERVICE_SECRET_KEY_PREVIOUS: keep the key that sealed them (${counts})`)
      }
      if (tables.moved > 0) {
        return yield* fail(`${tables.moved} rows changed while being re-sealed; run the command again to check them (${counts})`)
      }
      yield* print(`re-sealed ${tally.resealed} values under SERVICE_SECRET_KEY (${events} events, ${tables.rows} table cells); ${tally.current} were already under it`)
      yield* print(
        ring.ids.length > 1
          ? "every sealed value opens under SERVICE_SECRET_KEY: SERVICE_SECRET_KEY_PREVIOUS may be removed"
          : "every sealed value opens under SERVICE_SECRET_KEY"
      )
    })
  )).pipe(
    Command.withDescription(
      "Re-seal every secret sealed under SERVICE_SECRET_KEY_PREVIOUS under SERVICE_SECRET_KEY (webhook signing secrets, connection credentials, sealed inputs)"
    )
  )

export const secrets = Command.make("secrets").pipe(
  Command.withDescription("Rotate the secret key that seals secrets at rest"),
  Command.withSubcommands([reseal])
)
