/**
 * A small projection over test events that uses every kind of row change (upsert, update,
 * append, delete), a composite bigint key and nullable and jsonb columns, so replays and the two
 * view stores are compared on all of them. Events carry absolute values (the balance after a
 * deposit), as a pure projection cannot read the rows it writes.
 */
import type { AppendRequest, Json, RecordedEvent } from "../../../infra/eventlog/EventStore.ts"
import type { Projection, RowChange, TableSpec } from "../../../infra/eventlog/Projection.ts"

export const ACCOUNTS: TableSpec = {
  name: "test_accounts",
  columns: { id: "text", owner: "text", balance: "bigint", tags: "jsonb", closed: "boolean", note: "text" },
  nullable: ["note"],
  primaryKey: ["id"],
  indexes: [["owner", "-balance"]]
}

export const ENTRIES: TableSpec = {
  name: "test_entries",
  columns: { account: "text", seq: "bigint", amount: "bigint" },
  primaryKey: ["account", "seq"]
}

const field = (event: RecordedEvent, name: string): Json => {
  const data = event.data
  return typeof data === "object" && data !== null && !Array.isArray(data) ? ((data as Record<string, Json>)[name] ?? null) : null
}

const project = (event: RecordedEvent): ReadonlyArray<RowChange> => {
  const id = event.streamId
  switch (event.type) {
    case "Opened":
      return [{ op: "upsert", table: ACCOUNTS.name, row: { id, owner: field(event, "owner"), balance: 0, tags: [], closed: false } }]
    case "Deposited":
      return [
        { op: "update", table: ACCOUNTS.name, key: { id }, set: { balance: field(event, "balance") } },
        { op: "upsert", table: ENTRIES.name, row: { account: id, seq: event.version, amount: field(event, "amount") } }
      ]
    case "Tagged":
      return [{ op: "append", table: ACCOUNTS.name, key: { id }, column: "tags", value: field(event, "tag") }]
    case "Noted":
      return [{ op: "update", table: ACCOUNTS.name, key: { id }, set: { note: field(event, "note") } }]
    case "Refunded":
      return [{ op: "delete", table: ENTRIES.name, key: { account: id, seq: field(event, "seq") } }]
    case "Closed":
      return [{ op: "update", table: ACCOUNTS.name, key: { id }, set: { closed: true } }]
    default:
      return []
  }
}

export const accountsProjection = (mode: Projection["mode"] = "inline", name = "test_accounts"): Projection => ({
  name,
  mode,
  tables: mode === "inline" ? [ACCOUNTS, ENTRIES] : [{ ...ACCOUNTS, name: `${name}_accounts` }],
  streamTypes: ["account"],
  project: mode === "inline"
    ? project
    : (event) => project(event).filter((c) => c.table === ACCOUNTS.name).map((c) => ({ ...c, table: `${name}_accounts` }))
})

let counter = 0
const eventId = () => `evt_${process.pid}_${++counter}_${Math.random().toString(36).slice(2, 10)}`

/**
 * The next event for an account stream at `version` (0: not opened yet), chosen by `n` so a run
 * is varied but reproducible.
 */
export const nextEvent = (account: string, version: number, balance: number, n: number) => {
  const pick = version === 0 ? "Opened" : (["Deposited", "Deposited", "Tagged", "Noted", "Refunded", "Deposited", "Closed"] as const)[n % 7]!
  const amount = (n % 13) + 1
  const data: Record<string, Json> = pick === "Opened"
    ? { owner: `owner-${n % 5}` }
    : pick === "Deposited"
    ? { amount, balance: balance + amount }
    : pick === "Tagged"
    ? { tag: n % 3 === 0 ? { label: `t${n}`, weight: n } : `t${n}` }
    : pick === "Noted"
    ? { note: n % 4 === 0 ? null : `note ${n} \u00e9\u{1F600}` }
    : pick === "Refunded"
    ? { seq: Math.max(1, version - 1) }
    : {}
  const request: AppendRequest = {
    streamId: account,
    streamType: "account",
    expectedVersion: version,
    events: [{ eventId: eventId(), type: pick, schemaVersion: 1, data }]
  }
  return { request, balance: pick === "Deposited" ? balance + amount : balance }
}
