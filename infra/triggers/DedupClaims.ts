/**
 * Dedup claims (decisions.md section 5): one claim per (subscription, provider event id) for 24
 * hours, naming the eventId and arrivalId of the arrival that made it. Durable with a database
 * (a table, not the log: a deleted subscription's claims are deleted, and expired ones purged),
 * in memory without one. The provider's id is kept only as a SHA-256 digest.
 *
 * On Postgres the claim is `INSERT ... ON CONFLICT`: concurrent claimers of one key, in this
 * process or another, are ordered by the unique index, and exactly one gets `Claimed`; the others
 * read the winner's ids. Claims asked for while one statement runs share the next (infra/Batcher.ts).
 *
 * Its commit does not wait for the disk (`synchronous_commit = off`, that transaction only): no
 * answer rests on a claim alone. An arrival is answered once its record commits, synchronously,
 * later; that flush writes the log up to it, the claim included. A claim lost in a crash before
 * then belongs to an arrival that was never answered, which the provider sends again. One flush
 * per ingest instead of two: on this machine a flush costs 1.6-2.3 ms, a whole ingest on an
 * idle service 8.8 ms.
 */
import { Clock, Context, Effect, Layer, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { inOrder, makeBatcher } from "../Batcher.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"

export const DEDUP_WINDOW_MS = 24 * 60 * 60 * 1000
/** Expired claims removed per statement at most. */
export const PURGE_BATCH = 1_000

export interface Claim {
  readonly subscriptionId: string
  /** The provider's event id (push) or `issue:<id>` (polling). */
  readonly key: string
  readonly eventId: string
  readonly arrivalId: string
}

export type ClaimResult =
  | { readonly _tag: "Claimed" }
  | { readonly _tag: "Held"; readonly eventId: string; readonly arrivalId: string }

export interface DedupClaimsShape {
  readonly claim: (claim: Claim) => Effect.Effect<ClaimResult, StoreUnavailable>
  /** Every claim of a deleted subscription. */
  readonly release: (subscriptionId: string) => Effect.Effect<void, StoreUnavailable>
  /** Removes up to PURGE_BATCH expired claims; answers how many. */
  readonly purge: Effect.Effect<number, StoreUnavailable>
}

export class DedupClaims extends Context.Service<DedupClaims, DedupClaimsShape>()("app/infra/triggers/DedupClaims") {}

export const keyDigest = (key: string): string => createHash("sha256").update(key, "utf8").digest("base64url")

export const dedupMigrations: ReadonlyArray<Migration> = [{
  id: 400,
  name: "trigger_dedup_claims",
  statements: [
    `CREATE TABLE trigger_dedup_claims (
      subscription_id text NOT NULL,
      key_digest text NOT NULL,
      event_id text NOT NULL,
      arrival_id text NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (subscription_id, key_digest)
    )`,
    `CREATE INDEX trigger_dedup_claims_expiry ON trigger_dedup_claims (expires_at)`
  ]
}]

interface Held {
  readonly eventId: string
  readonly arrivalId: string
  readonly expiresAt: number
}

export const layerMemory: Layer.Layer<DedupClaims> = Layer.sync(DedupClaims, () => {
  const bySubscription = new Map<string, Map<string, Held>>()
  return DedupClaims.of({
    claim: (claim) =>
      Effect.map(Clock.currentTimeMillis, (now): ClaimResult => {
        let claims = bySubscription.get(claim.subscriptionId)
        if (claims === undefined) bySubscription.set(claim.subscriptionId, claims = new Map())
        const digest = keyDigest(claim.key)
        const held = claims.get(digest)
        if (held !== undefined && held.expiresAt > now) return { _tag: "Held", eventId: held.eventId, arrivalId: held.arrivalId }
        claims.set(digest, { eventId: claim.eventId, arrivalId: claim.arrivalId, expiresAt: now + DEDUP_WINDOW_MS })
        return { _tag: "Claimed" }
      }),
    release: (subscriptionId) => Effect.sync(() => void bySubscription.delete(subscriptionId)),
    purge: Effect.map(Clock.currentTimeMillis, (now) => {
      let removed = 0
      for (const [subscriptionId, claims] of bySubscription) {
        for (const [digest, held] of claims) {
          if (removed >= PURGE_BATCH) return removed
          if (held.expiresAt <= now) {
            claims.delete(digest)
            removed++
          }
        }
        if (claims.size === 0) bySubscription.delete(subscriptionId)
      }
      return removed
    })
  })
})

// One statement, so its own transaction: `set_config(..., true)` turns the wait for the flush
// off for that transaction alone (the module's note says why that is safe).
const CLAIM = `
  WITH unflushed AS (SELECT set_config('synchronous_commit', 'off', true))
  INSERT INTO trigger_dedup_claims (subscription_id, key_digest, event_id, arrival_id, expires_at)
  SELECT DISTINCT ON (s, k) s, k, e, a, now() + $5::interval
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(s, k, e, a, n), unflushed
  ORDER BY s, k, n
  ON CONFLICT (subscription_id, key_digest) DO UPDATE
    SET event_id = EXCLUDED.event_id, arrival_id = EXCLUDED.arrival_id, expires_at = EXCLUDED.expires_at
    WHERE trigger_dedup_claims.expires_at <= now()
  RETURNING arrival_id`

const HOLDERS = `
  SELECT subscription_id, key_digest, event_id, arrival_id FROM trigger_dedup_claims
  WHERE (subscription_id, key_digest) IN (SELECT * FROM unnest($1::text[], $2::text[]))`

const PURGE = `
  WITH removed AS (
    DELETE FROM trigger_dedup_claims WHERE ctid = ANY(ARRAY(
      SELECT ctid FROM trigger_dedup_claims WHERE expires_at <= now() LIMIT ${PURGE_BATCH}))
    RETURNING 1)
  SELECT count(*)::int AS n FROM removed`

const MAX_BATCH = 500

export const layerPg: Layer.Layer<DedupClaims, never, SqlClient.SqlClient> = Layer.effect(
  DedupClaims,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const unavailable = Effect.mapError((cause: unknown) => new StoreUnavailable({ cause }))
    const window = `${DEDUP_WINDOW_MS} milliseconds`
    const run = (claims: ReadonlyArray<Claim>) =>
      Effect.gen(function*() {
        const digests = claims.map((claim) => keyDigest(claim.key))
        const won = yield* sql.unsafe<{ arrival_id: string }>(CLAIM, [
          claims.map((claim) => claim.subscriptionId),
          digests,
          claims.map((claim) => claim.eventId),
          claims.map((claim) => claim.arrivalId),
          window
        ])
        const claimed = new Set(won.map((row) => row.arrival_id))
        const lost = claims.flatMap((claim, i) => (claimed.has(claim.arrivalId) ? [] : [[claim.subscriptionId, digests[i]!] as const]))
        // The winners' rows are committed by now (the insert waited for them), so this sees them.
        const holders = lost.length === 0 ? [] : yield* sql.unsafe<{ subscription_id: string; key_digest: string; event_id: string; arrival_id: string }>(
          HOLDERS,
          [lost.map(([s]) => s), lost.map(([, k]) => k)]
        )
        const byKey = new Map(holders.map((row) => [`${row.subscription_id}\u0000${row.key_digest}`, row]))
        return claims.map((claim, i): ClaimResult => {
          if (claimed.has(claim.arrivalId)) return { _tag: "Claimed" }
          const holder = byKey.get(`${claim.subscriptionId}\u0000${digests[i]}`)
          // Released meanwhile (the subscription is being deleted): nobody holds it.
          return holder === undefined ? { _tag: "Claimed" } : { _tag: "Held", eventId: holder.event_id, arrivalId: holder.arrival_id }
        })
      }).pipe(unavailable)
    const claim = yield* makeBatcher<Claim, ClaimResult, StoreUnavailable>({ maxBatch: MAX_BATCH, serve: inOrder(run) })
    return DedupClaims.of({
      claim,
      release: (subscriptionId) => sql`DELETE FROM trigger_dedup_claims WHERE subscription_id = ${subscriptionId}`.pipe(Effect.asVoid, unavailable),
      purge: sql.unsafe<{ n: number }>(PURGE).pipe(Effect.map((rows) => Number(rows[0]?.n ?? 0)), unavailable)
    })
  })
)

/** Expired claims go in batches every minute, for as long as the service runs. */
export const purgeLoop = Effect.gen(function*() {
  const claims = yield* DedupClaims
  yield* claims.purge.pipe(
    Effect.repeat({ while: (removed) => removed >= PURGE_BATCH }),
    Effect.catchCause((cause) => Effect.logWarning("trigger dedup purge failed; retrying later", cause)),
    Effect.repeat(Schedule.spaced("1 minute")),
    Effect.forkScoped
  )
})
