/**
 * Keyed leases: which incarnation (Runner.ts) runs a keyed actor that must run once across
 * processes (a webhook endpoint's lane, the dispatcher, a trigger poller). A lease is a row of
 * `actor_leases` naming its holder; it is valid while its holder's runner lease is, so it needs
 * no renewal of its own, and a holder that lost its runner lease has already stopped its actors
 * (Runner.ts). Taking a lease succeeds when it is free, already ours, or held by an incarnation
 * whose lease has lapsed; two takers racing for a lapsed lease are ordered by the row lock, and
 * the second finds it held by a live runner.
 *
 * Statements are plain statements on the pool (no connection is held), coalesced: the keys asked
 * for while one statement runs share the next. Memory mode grants every lease.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { inOrder, makeBatcher } from "../Batcher.ts"
import { onStorage } from "../eventlog/Database.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Incarnation } from "./Runner.ts"

export interface LeasesShape {
  /** True when `incarnation` holds `key` now (taken, or held already). */
  readonly tryAcquire: (incarnation: Incarnation, key: string) => Effect.Effect<boolean, StoreUnavailable>
  /** Gives `key` up, if `incarnation` holds it. */
  readonly release: (incarnation: Incarnation, key: string) => Effect.Effect<void, StoreUnavailable>
}

export class Leases extends Context.Service<Leases, LeasesShape>()("app/infra/actors/Leases") {}

export const layerMemory: Layer.Layer<Leases> = Layer.succeed(Leases, {
  tryAcquire: () => Effect.succeed(true),
  release: () => Effect.void
})

/** Keys per statement at most. */
const MAX_BATCH = 500

/** `previous`: the holder before this statement, so that a takeover can be logged. */
const ACQUIRE = `
  WITH wanted AS (SELECT DISTINCT k FROM unnest($1::text[]) AS u(k)),
  prior AS (SELECT lease_key, runner_id FROM actor_leases WHERE lease_key IN (SELECT k FROM wanted))
  INSERT INTO actor_leases (lease_key, runner_id)
  SELECT k, $2 FROM wanted
  ON CONFLICT (lease_key) DO UPDATE SET runner_id = EXCLUDED.runner_id, acquired_at = now()
    WHERE actor_leases.runner_id = EXCLUDED.runner_id
       OR NOT EXISTS (SELECT 1 FROM runners r WHERE r.runner_id = actor_leases.runner_id AND r.expires_at > now())
  RETURNING lease_key, (SELECT p.runner_id FROM prior p WHERE p.lease_key = actor_leases.lease_key) AS previous`

const RELEASE = `DELETE FROM actor_leases WHERE lease_key = ANY($1::text[]) AND runner_id = $2`

interface Ask {
  readonly holder: string
  readonly key: string
}

export const layerPg: Layer.Layer<Leases, never, SqlClient.SqlClient> = Layer.effect(
  Leases,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const unavailable = Effect.mapError((cause: unknown) => new StoreUnavailable({ cause }))
    /** One statement per holder in the batch (in practice one: this process's incarnation). */
    const byHolder = <A>(asks: ReadonlyArray<Ask>, statement: (holder: string, keys: ReadonlyArray<string>) => Effect.Effect<A, unknown>) =>
      Effect.forEach(
        Map.groupBy(asks, (ask) => ask.holder),
        ([holder, group]) => Effect.map(statement(holder, group.map((ask) => ask.key)), (result) => [holder, result] as const)
      ).pipe(unavailable)
    const acquire = yield* makeBatcher<Ask, boolean, StoreUnavailable>({
      maxBatch: MAX_BATCH,
      serve: inOrder((asks) =>
        byHolder(asks, (holder, keys) => sql.unsafe<{ lease_key: string; previous: string | null }>(ACQUIRE, [keys, holder])).pipe(
          // A lease held by another incarnation (whose runner lease lapsed) changed hands: say so.
          Effect.tap((results) =>
            Effect.forEach(results.flatMap(([holder, rows]) => rows.filter((row) => row.previous !== null && row.previous !== holder)), (row) =>
              Effect.logInfo("lease taken over", { lease: row.lease_key, from: row.previous }), { discard: true })),
          Effect.map((results) => {
            const granted = new Set(results.flatMap(([holder, rows]) => rows.map((row) => `${holder}\u0000${row.lease_key}`)))
            return asks.map((ask) => granted.has(`${ask.holder}\u0000${ask.key}`))
          })
        ))
    })
    const release = yield* makeBatcher<Ask, void, StoreUnavailable>({
      maxBatch: MAX_BATCH,
      serve: inOrder<Ask, void, StoreUnavailable>((asks) =>
        byHolder(asks, (holder, keys) => sql.unsafe(RELEASE, [keys, holder])).pipe(Effect.map(() => asks.map(() => undefined))))
    })
    return Leases.of({
      tryAcquire: (incarnation, key) => acquire({ holder: incarnation.id, key }),
      release: (incarnation, key) => release({ holder: incarnation.id, key })
    })
  })
)

export const layer = onStorage(layerMemory, layerPg)
