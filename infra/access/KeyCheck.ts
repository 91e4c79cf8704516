/**
 * Data sealed under one secret key is never silently unreadable (decisions.md section 9). A
 * service started with a key that does not open the data already in its database would accept
 * requests and then fail every webhook signature and every connection with "secret
 * unavailable", one by one. So at start, with a database, the key must open a sealed check value
 * kept in `secret_key_check` (written at the first start), or the service refuses to start with
 * one line saying so.
 *
 * A database that holds sealed data from before the check existed gets its check value only
 * after one of those values opened under the key (or the previous key, during a rotation).
 * `secrets reseal` re-seals the check value with everything else, so the previous key can go.
 *
 * The durable Secrets layer runs the check before it builds anything (DurableSecrets.ts).
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { type KeyRing, SEALED } from "./Secrets.ts"

/** The table of the check value; `secrets reseal` re-seals it after every other. */
export const KEY_CHECK_TABLE = "secret_key_check"

/** A table of one sealed value (the key check, the newest key's mark, the idempotency key). */
export const oneSealedValue = (table: string) =>
  `CREATE TABLE ${table} (
      id integer PRIMARY KEY CHECK (id = 1),
      sealed text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`

/** The value of such a table, when it has one. */
export const sealedValueOf = (sql: SqlClient.SqlClient, table: string): Effect.Effect<string | undefined, SqlError> =>
  Effect.map(sql<{ sealed: string }>`SELECT sealed FROM ${sql(table)} WHERE id = 1`, (rows) => rows[0]?.sealed)

export const keyCheckMigrations: ReadonlyArray<Migration> = [
  { id: 721, name: "secret_key_check", statements: [oneSealedValue("secret_key_check")] },
  { id: 723, name: "secret_key_newest", statements: [oneSealedValue("secret_key_newest")] }
]

/** What the check value holds, sealed. */
const CHECK_TEXT = "service/secret-key-check/v1"

export class SecretKeyMismatch extends Schema.TaggedError<SecretKeyMismatch>()("SecretKeyMismatch", {
  detail: Schema.String,
  advice: Schema.optionalKey(Schema.String)
}) {
  override get message() {
    return `SERVICE_SECRET_KEY: ${this.detail}; ${
      this.advice ?? "start with the key that sealed it, or rotate: that key as SERVICE_SECRET_KEY_PREVIOUS, the new one as SERVICE_SECRET_KEY, then `secrets reseal`"
    }`
  }
}

/** Every sealed value inside a JSON value. */
export const sealedValuesIn = (value: unknown, into: Array<string> = []): Array<string> => {
  if (typeof value === "string") {
    if (SEALED.test(value)) into.push(value)
  } else if (Array.isArray(value)) {
    for (const item of value) sealedValuesIn(item, into)
  } else if (typeof value === "object" && value !== null) {
    for (const item of Object.values(value)) sealedValuesIn(item, into)
  }
  return into
}

/** Sealed values already in the log, when there is a log: a few, to try the key on. */
const sealedInLog = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const exists = yield* sql<{ present: boolean }>`SELECT to_regclass('events') IS NOT NULL AS present`
    if (exists[0]?.present !== true) return []
    const rows = yield* sql<{ data: unknown }>`SELECT data FROM events WHERE data::text LIKE '%"v1.%' LIMIT 20`
    return rows.flatMap((row) => sealedValuesIn(typeof row.data === "string" ? JSON.parse(row.data) : row.data))
  })

/**
 * Marks the current key as the newest one values are sealed under (`secret_key_newest`), before
 * a process in a rotation seals anything under it (SealingKey.ts). From then on a process that
 * lacks it is refused at its start (verifyKey), rather than failing those values one request and
 * one delivery at a time (outside audit). The check value keeps the oldest key still in use, so
 * both ends of a rotation are held: the new key alone is refused until `secrets reseal` is done,
 * the old key alone once the new one sealed anything.
 */
export const markNewest = (sql: SqlClient.SqlClient, ring: KeyRing): Effect.Effect<void, SqlError> =>
  Effect.gen(function*() {
    const newest = yield* sealedValueOf(sql, "secret_key_newest")
    if (newest !== undefined && !ring.openedByPrevious(newest)) return
    const sealed = ring.seal(CHECK_TEXT)
    yield* newest === undefined
      ? sql`INSERT INTO secret_key_newest (id, sealed) VALUES (1, ${sealed}) ON CONFLICT (id) DO NOTHING`
      : sql`UPDATE secret_key_newest SET sealed = ${sealed} WHERE id = 1 AND sealed = ${newest}`
    yield* Effect.logInfo("secret key rotation: values are sealed under SERVICE_SECRET_KEY from now on: a process without it no longer starts")
  })

/** Fails with SecretKeyMismatch unless the configured keys open the database's sealed data. */
export const verifyKey = (sql: SqlClient.SqlClient, ring: KeyRing): Effect.Effect<void, SqlError | SecretKeyMismatch> =>
  Effect.gen(function*() {
    const check = yield* sealedValueOf(sql, KEY_CHECK_TABLE)
    if (check === undefined) {
      const found = yield* sealedInLog(sql)
      if (found.length > 0 && !found.some((sealed) => ring.open(sealed) !== undefined)) {
        return yield* new SecretKeyMismatch({ detail: "it does not open the secrets already sealed in this database" })
      }
      yield* sql`INSERT INTO secret_key_check (id, sealed) VALUES (1, ${ring.seal(CHECK_TEXT)}) ON CONFLICT (id) DO NOTHING`
      // Another process may have written its own first: verify what is there now.
      return yield* verifyKey(sql, ring)
    }
    if (ring.open(check) !== CHECK_TEXT) {
      return yield* new SecretKeyMismatch({ detail: "it does not open the data sealed in this database (sealed under another key)" })
    }
    const newest = yield* sealedValueOf(sql, "secret_key_newest")
    if (newest !== undefined && ring.open(newest) !== CHECK_TEXT) {
      return yield* new SecretKeyMismatch({
        detail: "it does not open the data a rotation already sealed under a newer key in this database",
        advice: "start with that newer key as SERVICE_SECRET_KEY and this one as SERVICE_SECRET_KEY_PREVIOUS"
      })
    }
    if (ring.openedByPrevious(check)) {
      yield* Effect.logInfo("secret key rotation under way: data sealed under SERVICE_SECRET_KEY_PREVIOUS is still read; run `secrets reseal` to re-seal it")
    }
  })
