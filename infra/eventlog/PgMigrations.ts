/**
 * Schema migrations: numbered SQL steps applied once, in order, inside one transaction that
 * holds an advisory lock, so several processes starting together migrate exactly once.
 * Each feature exports its own steps (`migrations` in its `index.ts`); the composition root
 * (src/App.ts) hands them all to `Database.layer`, which applies the new ones in id order at
 * start-up. Ids are global, kept forever and never reused: a step once shipped is never edited.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

export interface Migration {
  readonly id: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

const MIGRATION_LOCK = 7_100_001

export const eventLogMigrations: ReadonlyArray<Migration> = [
  {
    id: 1,
    name: "event_log",
    statements: [
      `CREATE TABLE streams (
        stream_id text PRIMARY KEY,
        stream_type text NOT NULL,
        version integer NOT NULL
      )`,
      `CREATE INDEX streams_type ON streams (stream_type)`,
      `CREATE TABLE events (
        global_position bigint GENERATED ALWAYS AS IDENTITY,
        tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
        stream_id text NOT NULL,
        stream_version integer NOT NULL,
        event_id text NOT NULL UNIQUE,
        event_type text NOT NULL,
        schema_version integer NOT NULL,
        data jsonb NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (stream_id, stream_version)
      )`,
      `CREATE INDEX events_feed ON events (tx_id, global_position)`,
      // The log is append-only: the application never updates or deletes events, and the
      // database refuses it even to a role that could.
      `CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'events is append-only'; END $$`,
      `CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
        FOR EACH ROW EXECUTE FUNCTION events_append_only()`,
      `CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_append_only()`,
      `REVOKE UPDATE, DELETE, TRUNCATE ON events FROM PUBLIC`,
      `CREATE TABLE projection_state (
        name text PRIMARY KEY,
        spec_hash text NOT NULL,
        checkpoint_tx xid8 NOT NULL DEFAULT '0',
        checkpoint_seq bigint NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`
    ]
  },
  {
    id: 4,
    name: "append_guard",
    statements: [
      // A commit of the event log is one statement (PgEventStore.ts): this aborts it, with the
      // streams that moved in its detail, when some expected version no longer holds.
      `CREATE FUNCTION append_guard(moved text[]) RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN
          IF cardinality(moved) > 0 THEN
            RAISE EXCEPTION 'append_conflict' USING DETAIL = array_to_json(moved)::text;
          END IF;
          RETURN true;
        END $$`
    ]
  },
  {
    id: 10,
    name: "streams_fillfactor",
    statements: [
      // A stream row is inserted and then updated at every later append: room left on its page
      // makes most of those updates HOT, writing no index entries (3-4% were, at fillfactor 100;
      // about half at 70, all at 50, which measured no faster for a table twice the size).
      `ALTER TABLE streams SET (fillfactor = 70)`
    ]
  },
  {
    id: 720,
    name: "events_reseal_in_place",
    statements: [
      // The one exception to append-only: `secrets reseal` (src/cli/Secrets.ts) rewrites sealed
      // values under the current secret key. It changes no fact: the same plaintext, the same
      // event, position and time; only `data` may differ, and only in a transaction that says
      // it is re-sealing.
      `CREATE OR REPLACE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'UPDATE' AND current_setting('service.resealing', true) = 'on'
             AND (NEW.global_position, NEW.tx_id, NEW.stream_id, NEW.stream_version, NEW.event_id,
                  NEW.event_type, NEW.schema_version, NEW.metadata, NEW.created_at)
                 IS NOT DISTINCT FROM
                 (OLD.global_position, OLD.tx_id, OLD.stream_id, OLD.stream_version, OLD.event_id,
                  OLD.event_type, OLD.schema_version, OLD.metadata, OLD.created_at) THEN
            RETURN NEW;
          END IF;
          RAISE EXCEPTION 'events is append-only';
        END $$`
    ]
  }
]

/**
 * The database holds migrations this code does not know: a newer version of the service
 * migrated it. Running older code on it could write what the newer one no longer reads.
 */
export class SchemaTooNew extends Schema.TaggedError<SchemaTooNew>()("SchemaTooNew", {
  unknown: Schema.Array(Schema.String)
}) {
  override get message() {
    return `the database was migrated by a newer version of the service (migrations ${this.unknown.join(", ")} are unknown to this one); run that version or a newer one`
  }
}

/** The migrations applied to the database (none when it has no `schema_migrations` yet); reads only. */
const appliedMigrations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const exists = yield* sql<{ present: boolean }>`SELECT to_regclass('schema_migrations') IS NOT NULL AS present`
  if (exists[0]?.present !== true) return []
  const rows = yield* sql<{ id: number; name: string }>`SELECT id, name FROM schema_migrations ORDER BY id`
  return rows.map((row) => ({ id: Number(row.id), name: row.name }))
})

/** Fails with SchemaTooNew when `schema_migrations` holds an id that `migrations` lacks. */
export const checkSchemaVersion = (
  migrations: ReadonlyArray<Migration>
): Effect.Effect<void, SqlError | SchemaTooNew, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const known = new Set(migrations.map((migration) => migration.id))
    const unknown = (yield* appliedMigrations).filter((row) => !known.has(row.id)).map((row) => `${row.id}_${row.name}`)
    if (unknown.length > 0) return yield* new SchemaTooNew({ unknown })
  })

/**
 * The database lacks migrations this code has: it was never migrated, or an older version left
 * it. Told by the commands that only read (they change no schema), which the operator's
 * `migrate` puts right.
 */
export class SchemaBehind extends Schema.TaggedError<SchemaBehind>()("SchemaBehind", {
  applied: Schema.Number,
  known: Schema.Number
}) {
  override get message() {
    return `the database is not migrated to this version of the service (${this.applied} of ${this.known} migrations applied); run \`migrate\` first`
  }
}

/** Fails with SchemaBehind unless every one of `migrations` is applied; reads, never writes. */
export const checkSchemaCurrent = (
  migrations: ReadonlyArray<Migration>
): Effect.Effect<void, SqlError | SchemaBehind, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const applied = new Set((yield* appliedMigrations).map((row) => row.id))
    const done = migrations.filter((migration) => applied.has(migration.id)).length
    if (done < migrations.length) return yield* new SchemaBehind({ applied: done, known: migrations.length })
  })

export const runMigrations = (
  migrations: ReadonlyArray<Migration>
): Effect.Effect<ReadonlyArray<string>, SqlError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sorted = [...migrations].toSorted((a, b) => a.id - b.id)
    return yield* sql.withTransaction(
      Effect.gen(function*() {
        yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
        yield* sql`CREATE TABLE IF NOT EXISTS schema_migrations (
          id integer PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`
        const applied = new Set(
          (yield* sql<{ id: number }>`SELECT id FROM schema_migrations`).map((row) => Number(row.id))
        )
        const done: Array<string> = []
        for (const migration of sorted) {
          if (applied.has(migration.id)) continue
          for (const statement of migration.statements) yield* sql.unsafe(statement)
          yield* sql`INSERT INTO schema_migrations (id, name) VALUES (${migration.id}, ${migration.name})`
          done.push(`${migration.id}_${migration.name}`)
        }
        return done
      })
    )
  })
