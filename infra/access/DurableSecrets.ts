/**
 * The secret key's uses with a database (Secrets.ts): the key ring as configured, built only
 * after the key check (KeyCheck.ts) passed, so a wrong key stops the start with its one line
 * before anything else reads sealed data; during a rotation, sealing and MACs under the key every
 * running process holds (SealingKey.ts); and the database's idempotency key.
 *
 * An idempotency claim holds a MAC of the request's input, which is not kept (docs/executions.md,
 * "Idempotency"), so `secrets reseal` cannot MAC it again under a new key. The MAC is therefore
 * taken under a random key of the database's own, generated at the first start and kept in
 * `secret_idempotency_key` sealed under SERVICE_SECRET_KEY like any other secret: a rotation
 * re-seals it, and its bytes, and every claim's MAC, stay the same.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { randomBytes } from "node:crypto"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { oneSealedValue, SecretKeyMismatch, sealedValueOf, verifyKey } from "./KeyCheck.ts"
import { sealing } from "./SealingKey.ts"
import { type KeyRing, keyRingOf, macUnder, Secrets, type SecretsShape } from "./Secrets.ts"

export const idempotencyKeyMigrations: ReadonlyArray<Migration> = [{
  id: 722,
  // Sorts before `secret_key_check` by name too (`secrets reseal` re-seals the check last anyway).
  name: "secret_idempotency_key",
  statements: [oneSealedValue("secret_idempotency_key")]
}]

/**
 * The database's idempotency key: made and sealed by the first process to get here (another
 * starting at the same moment keeps its own out: ON CONFLICT), then read back and opened.
 */
export const idempotencyKey = (sql: SqlClient.SqlClient, ring: Pick<KeyRing, "seal" | "open">): Effect.Effect<Uint8Array, SqlError | SecretKeyMismatch> =>
  Effect.gen(function*() {
    const fresh = ring.seal(randomBytes(32).toString("base64url"))
    yield* sql`INSERT INTO secret_idempotency_key (id, sealed) VALUES (1, ${fresh}) ON CONFLICT (id) DO NOTHING`
    const stored = yield* sealedValueOf(sql, "secret_idempotency_key")
    const opened = stored === undefined ? undefined : ring.open(stored)
    if (opened === undefined) {
      return yield* new SecretKeyMismatch({ detail: "it does not open the idempotency key sealed in this database (sealed under another key)" })
    }
    return new Uint8Array(Buffer.from(opened, "base64url"))
  })

/** The configured key ring after the key check, with its stable MAC under the database's idempotency key. */
export const layer = Layer.effect(
  Secrets,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const ring = yield* keyRingOf(true)
    yield* verifyKey(sql, ring)
    const { seal, mac } = yield* sealing(sql, ring)
    const stableMac = macUnder(yield* idempotencyKey(sql, { seal, open: ring.open }))
    return { ...ring, seal, mac, stableMac } satisfies SecretsShape
  })
)
