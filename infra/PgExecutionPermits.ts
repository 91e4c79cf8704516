/**
 * Execution permits on Postgres: one row per granted permit, so caps hold across processes. Every
 * grant takes an advisory transaction lock per (project, toolkit) and counts before inserting.
 * Grants are batched like event appends (group commit): concurrent requests of this process
 * share one call of `grant_execution_permits`, which locks their lanes in a fixed order and
 * grants in arrival order up to each lane's cap, in one round trip.
 *
 * A permit counts as held while its execution is not terminal in the `executions` view (or has no
 * row there yet: granted, request not yet committed). The terminal event's commit therefore frees
 * the permit in the same transaction that records the outcome, and deleting the row afterwards is
 * housekeeping that nobody waits for.
 */
import { Deferred, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { StoreUnavailable } from "./EventStore.ts"
import { ExecutionPermits, makePermits, type PermitKey, type PermitStore } from "./ExecutionPermits.ts"

/** Advisory lock class of permit lanes (the second key is the lane's hash). */
const LOCK_CLASS = 7_200

/**
 * One call, one round trip: locks the lanes (sorted, so concurrent callers cannot deadlock), then
 * grants in request order up to each lane's cap. Statements of a volatile function take fresh
 * snapshots, so the count sees every permit committed before the lock. `endsWithExecution`
 * (migration 202): a permit whose execution is terminal in the view no longer counts.
 */
const grantFunction = (replace: "" | "OR REPLACE", endsWithExecution: boolean) =>
  `CREATE ${replace} FUNCTION grant_execution_permits(ids text[], projects text[], toolkits text[], caps int4[])
   RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS $$
   #variable_conflict use_column
   BEGIN
     PERFORM pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(l.lane))
     FROM (SELECT DISTINCT u.p || '/' || u.t AS lane FROM unnest(projects, toolkits) AS u(p, t) ORDER BY 1) l;
     RETURN QUERY
     WITH req AS (
       SELECT * FROM unnest(ids, projects, toolkits, caps) WITH ORDINALITY AS r(execution_id, project_id, toolkit, cap, ord)
     ), held AS (
       SELECT p.project_id, p.toolkit, count(*) AS n FROM execution_permits p
       ${endsWithExecution ? "LEFT JOIN v_executions v ON v.project_id = p.project_id AND v.execution_id = p.execution_id" : ""}
       WHERE (p.project_id, p.toolkit) IN (SELECT project_id, toolkit FROM req)
         AND p.execution_id <> ALL (ids)
         ${endsWithExecution ? "AND (v.status IS NULL OR v.status IN ('pending', 'running'))" : ""}
       GROUP BY 1, 2
     ), ranked AS (
       SELECT r.*, row_number() OVER (PARTITION BY r.project_id, r.toolkit ORDER BY r.ord) AS rn, coalesce(h.n, 0) AS n
       FROM req r LEFT JOIN held h USING (project_id, toolkit)
     )
     INSERT INTO execution_permits AS e (execution_id, project_id, toolkit)
     SELECT r.execution_id, r.project_id, r.toolkit FROM ranked r WHERE r.n + r.rn <= r.cap
     ON CONFLICT (execution_id) DO UPDATE SET acquired_at = excluded.acquired_at
     RETURNING e.execution_id;
   END $$`

/** Permits table (migrations 200-299). */
export const permitMigrations = [{
  id: 200,
  name: "execution_permits",
  statements: [
    `CREATE TABLE execution_permits (
      execution_id text PRIMARY KEY,
      project_id text NOT NULL,
      toolkit text NOT NULL,
      acquired_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE INDEX execution_permits_lane ON execution_permits (project_id, toolkit)`
  ]
}, {
  id: 201,
  name: "grant_execution_permits",
  statements: [
    grantFunction("", false)
  ]
}, {
  id: 202,
  name: "permits_end_with_their_execution",
  statements: [
    // As 201, but a permit whose execution is terminal in the view is no longer counted: the
    // outcome's commit is the release.
    grantFunction("OR REPLACE", true)
  ]
}] as const

const MAX_BATCH = 256
/** Deleting rows is housekeeping; a permit whose execution never recorded anything waits this long at most. */
const RELEASE_INTERVAL = "200 millis"

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

interface Grant {
  readonly key: PermitKey
  readonly cap: number
  readonly done: Deferred.Deferred<boolean, StoreUnavailable>
}

export const makePgPermitStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const grants = yield* Queue.unbounded<Grant>()
  const releases = yield* Queue.unbounded<PermitKey>()

  const grantBatch = (batch: ReadonlyArray<Grant>) =>
    sql<{ id: string }>`
      SELECT g AS id FROM grant_execution_permits(
        ${batch.map((g) => g.key.executionId)}::text[], ${batch.map((g) => g.key.projectId)}::text[],
        ${batch.map((g) => g.key.toolkit)}::text[], ${batch.map((g) => g.cap)}::int4[]) AS g`.pipe(
      Effect.map((rows) => new Set(rows.map((row) => row.id))),
      Effect.matchEffect({
        onFailure: (error) => Effect.forEach(batch, (g) => Deferred.fail(g.done, unavailable(error)), { discard: true }),
        onSuccess: (granted) =>
          Effect.forEach(batch, (g) => Deferred.succeed(g.done, granted.has(g.key.executionId)), { discard: true })
      })
    )

  // Housekeeping: a row left behind by a failed delete no longer counts once its execution is
  // terminal, and a later recovery scan (ExecutionRecovery.ts) deletes it.
  const releaseBatch = (batch: ReadonlyArray<PermitKey>) =>
    sql`DELETE FROM execution_permits WHERE execution_id = ANY(${batch.map((key) => key.executionId)}::text[])`.pipe(
      Effect.catch((error) => Effect.logWarning("permit rows not deleted; a recovery scan reclaims them", error))
    )

  yield* Effect.forkScoped(Queue.takeBetween(grants, 1, MAX_BATCH).pipe(Effect.flatMap(grantBatch), Effect.forever))
  // Deletions gather for a moment: one statement per interval rather than one per commit.
  yield* Effect.forkScoped(
    Queue.takeBetween(releases, 1, 4 * MAX_BATCH).pipe(
      Effect.flatMap(releaseBatch),
      Effect.andThen(Effect.sleep(RELEASE_INTERVAL)),
      Effect.forever
    )
  )

  const store: PermitStore = {
    tryInsert: (key, cap) =>
      Effect.flatMap(Deferred.make<boolean, StoreUnavailable>(), (done) =>
        Effect.andThen(Queue.offer(grants, { key, cap, done }), Deferred.await(done))),
    // Nobody waits: after the outcome's commit the permit is already free (see above).
    remove: (key) => Queue.offer(releases, key).pipe(Effect.asVoid),
    // Rows of executions that ended, and rows granted a minute ago to requests never recorded
    // (a process died between grant and commit); a fresher row may be a peer's request in flight.
    reclaimStale: sql`DELETE FROM execution_permits p
        WHERE p.acquired_at < now() - interval '1 minute'
          AND NOT EXISTS (
            SELECT 1 FROM v_executions v
            WHERE v.execution_id = p.execution_id AND v.status IN ('pending', 'running'))`.pipe(
      Effect.asVoid,
      Effect.mapError(unavailable)
    )
  }
  return store
})

export const layerPg = Layer.effect(
  ExecutionPermits,
  Effect.map(makePgPermitStore, (store) => makePermits(store, { poll: true }))
)
