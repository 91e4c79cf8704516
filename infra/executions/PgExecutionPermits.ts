/**
 * Execution permits on Postgres, shared by every process so caps hold across them. A lane
 * (project, toolkit) has one row per permit of its cap, a slot naming its holder. Every grant
 * takes an advisory transaction lock per lane and fills free slots. Grants are batched like event
 * appends (group commit): concurrent requests of this process share one call of
 * `grant_execution_permits`, which locks their lanes in a fixed order and grants in arrival order,
 * in one round trip.
 *
 * A slot is free when it has no holder, when its holder is terminal in the `executions` view, or
 * when its holder has had no view row for a minute (granted to a request that was never recorded:
 * its process died between grant and commit). The terminal event's commit therefore frees the
 * permit in the same transaction that records the outcome; clearing the holder afterwards is
 * housekeeping that nobody waits for.
 *
 * Slots are updated in place (migration 203): the rows of a busy lane neither grow nor leave dead
 * index entries behind, so a grant reads `cap` rows per lane whatever the traffic. Until then a
 * permit was a row inserted and deleted per execution, and a grant scanned the dead ones too.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { inOrder, makeBatcher, makeSink } from "../Batcher.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
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

/**
 * Every writer of slots (grant, release, reclaim) first takes the advisory locks of the lanes it
 * touches, in the order of the lock keys, so two writers never wait on each other's rows in
 * opposite orders (a release updating rows while a grant held others deadlocked in a benchmark).
 */
const lockLanesFunction = `CREATE FUNCTION lock_permit_lanes(projects text[], toolkits text[]) RETURNS void
   LANGUAGE plpgsql VOLATILE AS $$
   BEGIN
     PERFORM pg_advisory_xact_lock(${LOCK_CLASS}, k.key) FROM (
       SELECT DISTINCT hashtext(u.p || '/' || u.t) AS key FROM unnest(projects, toolkits) AS u(p, t) ORDER BY 1
     ) k;
   END $$`

/** Clears the slots some executions hold (housekeeping, see `remove`). */
const releaseFunction = `CREATE FUNCTION release_execution_permits(ids text[], projects text[], toolkits text[]) RETURNS void
   LANGUAGE plpgsql VOLATILE AS $$
   BEGIN
     PERFORM set_config('synchronous_commit', 'off', true);
     PERFORM lock_permit_lanes(projects, toolkits);
     UPDATE execution_permit_slots s SET execution_id = NULL
     FROM unnest(ids, projects, toolkits) AS r(execution_id, project_id, toolkit)
     WHERE s.project_id = r.project_id AND s.toolkit = r.toolkit AND s.execution_id = r.execution_id;
   END $$`

/**
 * Clears holders that ended, and holders granted a minute ago to requests never recorded (a
 * process died between grant and commit); a fresher one may be a peer's request in flight.
 */
const reclaimFunction = `CREATE FUNCTION reclaim_execution_permits() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
   DECLARE
     projects text[];
     toolkits text[];
   BEGIN
     SELECT coalesce(array_agg(project_id), '{}'), coalesce(array_agg(toolkit), '{}') INTO projects, toolkits
     FROM (SELECT DISTINCT project_id, toolkit FROM execution_permit_slots
           WHERE execution_id IS NOT NULL AND acquired_at < now() - interval '1 minute') l;
     PERFORM lock_permit_lanes(projects, toolkits);
     UPDATE execution_permit_slots s SET execution_id = NULL
     FROM unnest(projects, toolkits) AS l(project_id, toolkit)
     WHERE s.project_id = l.project_id AND s.toolkit = l.toolkit
       AND s.execution_id IS NOT NULL AND s.acquired_at < now() - interval '1 minute'
       AND NOT EXISTS (
         SELECT 1 FROM v_executions v
         WHERE v.project_id = s.project_id AND v.execution_id = s.execution_id AND v.status IN ('pending', 'running'));
   END $$`

/**
 * One call, one round trip, as above: lanes locked in order, then free slots filled in request
 * order. `ensureOnlyMissing` (migration 204): the slots are inserted only for a lane that lacks its
 * last slot (a new lane, or a cap that grew): slots are made as a whole range from 0 and never
 * dropped, so the last one stands for all. One index probe per request replaces an insert attempt
 * per slot on every grant, which was about a quarter of a grant's cost at small batches.
 */
const slotGrantFunction = (ensureOnlyMissing: boolean) => `CREATE OR REPLACE FUNCTION grant_execution_permits(ids text[], projects text[], toolkits text[], caps int4[])
   RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS $$
   #variable_conflict use_column
   BEGIN
     -- No flush of its own: the request's commit, which every use of the permit follows, flushes
     -- the log up to and including this grant; a grant lost to a crash was never used.
     PERFORM set_config('synchronous_commit', 'off', true);
     PERFORM lock_permit_lanes(projects, toolkits);
     -- A lane's slots are made on its first grant (and when its cap grows).
     INSERT INTO execution_permit_slots (project_id, toolkit, slot)
     SELECT DISTINCT u.p, u.t, n FROM unnest(projects, toolkits, caps) AS u(p, t, c), generate_series(0, u.c - 1) AS n${
  ensureOnlyMissing
    ? `
     WHERE NOT EXISTS (SELECT 1 FROM execution_permit_slots s WHERE s.project_id = u.p AND s.toolkit = u.t AND s.slot = u.c - 1)`
    : ""}
     ON CONFLICT DO NOTHING;
     RETURN QUERY
     WITH req AS (
       SELECT * FROM unnest(ids, projects, toolkits, caps) WITH ORDINALITY AS r(execution_id, project_id, toolkit, cap, ord)
     ), lanes AS (
       SELECT DISTINCT project_id, toolkit, cap FROM req
     ), slots AS (
       SELECT s.project_id, s.toolkit, s.slot, s.execution_id AS holder,
         s.execution_id IS NULL
           OR coalesce(v.status IN ('succeeded', 'failed', 'cancelled'), false)
           OR (v.execution_id IS NULL AND s.acquired_at < now() - interval '1 minute') AS free
       FROM execution_permit_slots s
       JOIN lanes l ON l.project_id = s.project_id AND l.toolkit = s.toolkit AND s.slot < l.cap
       LEFT JOIN v_executions v ON v.project_id = s.project_id AND v.execution_id = s.execution_id
     ), already AS (
       SELECT r.execution_id FROM req r
       JOIN slots s ON s.project_id = r.project_id AND s.toolkit = r.toolkit AND s.holder = r.execution_id AND NOT s.free
     ), wanted AS (
       SELECT r.*, row_number() OVER (PARTITION BY r.project_id, r.toolkit ORDER BY r.ord) AS rn
       FROM req r WHERE r.execution_id NOT IN (SELECT execution_id FROM already)
     ), open AS (
       SELECT s.*, row_number() OVER (PARTITION BY s.project_id, s.toolkit ORDER BY s.slot) AS rn
       FROM slots s WHERE s.free
     ), granted AS (
       UPDATE execution_permit_slots e SET execution_id = w.execution_id, acquired_at = now()
       FROM wanted w JOIN open o ON o.project_id = w.project_id AND o.toolkit = w.toolkit AND o.rn = w.rn
       WHERE e.project_id = o.project_id AND e.toolkit = o.toolkit AND e.slot = o.slot
       RETURNING e.execution_id
     )
     SELECT execution_id FROM granted UNION ALL SELECT execution_id FROM already;
   END $$`

/**
 * The check of `EventStore.appendWithinCap`, inside the event log's commit (PgEventStore.ts): it
 * locks the lanes as a grant does, then counts each lane's busy slots (held, by an execution not
 * terminal in the view, or granted under a minute ago to one not recorded yet) with a fresh
 * snapshot, as volatile functions take. A full lane aborts the commit, naming the appends it
 * refused by their first stream; the lock is held until the commit, so no grant races it.
 */
const laneGuardFunction = `CREATE FUNCTION append_lane_guard(streams text[], projects text[], toolkits text[], caps int4[])
   RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
   DECLARE
     refused text[];
   BEGIN
     PERFORM lock_permit_lanes(projects, toolkits);
     SELECT array_agg(r.stream_id) INTO refused
     FROM unnest(streams, projects, toolkits, caps) AS r(stream_id, project_id, toolkit, cap)
     WHERE (SELECT count(*) FROM execution_permit_slots s
            LEFT JOIN v_executions v ON v.project_id = s.project_id AND v.execution_id = s.execution_id
            WHERE s.project_id = r.project_id AND s.toolkit = r.toolkit AND s.slot < r.cap AND s.execution_id IS NOT NULL
              AND NOT coalesce(v.status IN ('succeeded', 'failed', 'cancelled'), false)
              AND NOT (v.execution_id IS NULL AND s.acquired_at < now() - interval '1 minute')) >= r.cap;
     IF refused IS NOT NULL THEN
       RAISE EXCEPTION 'append_lane_full' USING DETAIL = array_to_json(refused)::text;
     END IF;
     RETURN true;
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
}, {
  id: 203,
  name: "permit_slots",
  statements: [
    // The holder is not indexed, so taking and clearing a slot are HOT updates (fillfactor
    // leaves them room on the page).
    `CREATE TABLE execution_permit_slots (
      project_id text NOT NULL,
      toolkit text NOT NULL,
      slot int4 NOT NULL,
      execution_id text,
      acquired_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (project_id, toolkit, slot)
    ) WITH (fillfactor = 50)`,
    // Not carried over: migrations run before the service serves, and the executions of a stopped
    // process take their permits again when recovery resumes them.
    `DROP TABLE execution_permits`,
    lockLanesFunction,
    slotGrantFunction(false),
    releaseFunction,
    reclaimFunction
  ]
}, {
  id: 204,
  name: "grant_inserts_missing_slots_only",
  statements: [slotGrantFunction(true)]
}, {
  id: 205,
  name: "append_lane_guard",
  statements: [laneGuardFunction]
}] as const

const MAX_BATCH = 256
/** Clearing holders is housekeeping; a permit whose execution never recorded anything waits this long at most. */
const RELEASE_INTERVAL = "200 millis"

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

interface Grant {
  readonly key: PermitKey
  readonly cap: number
}

export const makePgPermitStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const grant = yield* makeBatcher<Grant, boolean, StoreUnavailable>({
    maxBatch: MAX_BATCH,
    serve: inOrder((grants) =>
      sql<{ id: string }>`
        SELECT g AS id FROM grant_execution_permits(
          ${grants.map((g) => g.key.executionId)}::text[], ${grants.map((g) => g.key.projectId)}::text[],
          ${grants.map((g) => g.key.toolkit)}::text[], ${grants.map((g) => g.cap)}::int4[]) AS g`.pipe(
        Effect.map((rows) => {
          const granted = new Set(rows.map((row) => row.id))
          return grants.map((g) => granted.has(g.key.executionId))
        }),
        Effect.mapError(unavailable)
      ))
  })

  // Housekeeping: a holder left behind by a failed release no longer counts once its execution is
  // terminal, and a later recovery scan (ExecutionRecovery.ts) clears it. Releases gather for a
  // moment: one statement per interval rather than one per commit.
  const release = yield* makeSink<PermitKey>({
    maxBatch: 4 * MAX_BATCH,
    pause: RELEASE_INTERVAL,
    serve: (keys) =>
      sql`SELECT release_execution_permits(${keys.map((key) => key.executionId)}::text[],
            ${keys.map((key) => key.projectId)}::text[], ${keys.map((key) => key.toolkit)}::text[])`.pipe(
        Effect.asVoid,
        Effect.catch((error) => Effect.logWarning("permit holders not cleared; a recovery scan reclaims them", error))
      )
  })

  const store: PermitStore = {
    tryInsert: (key, cap) => grant({ key, cap }),
    // Nobody waits: after the outcome's commit the permit is already free (see above).
    remove: release,
    // Under the lane's lock, as every writer of slots; the view is written in the commit of each
    // execution event, so a request applied late keeps its slot.
    removeUnrecorded: (key) =>
      sql.withTransaction(
        sql`SELECT lock_permit_lanes(${[key.projectId]}::text[], ${[key.toolkit]}::text[])`.pipe(
          Effect.andThen(sql`UPDATE execution_permit_slots s SET execution_id = NULL
            WHERE s.project_id = ${key.projectId} AND s.toolkit = ${key.toolkit} AND s.execution_id = ${key.executionId}
              AND NOT EXISTS (SELECT 1 FROM v_executions v WHERE v.project_id = s.project_id
                AND v.execution_id = s.execution_id AND v.status IN ('pending', 'running'))`)
        )
      ).pipe(Effect.asVoid, Effect.mapError(unavailable)),
    reclaimStale: sql`SELECT reclaim_execution_permits()`.pipe(
      Effect.asVoid,
      Effect.mapError(unavailable)
    )
  }
  return store
})

export const layerPg = Layer.effect(
  ExecutionPermits,
  Effect.gen(function*() {
    const store = yield* makePgPermitStore
    // Releases of unrecorded permits run in the layer's scope: they end when the service stops.
    return makePermits(store, { poll: true, scope: yield* Effect.scope })
  })
)
