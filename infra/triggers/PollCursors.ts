/**
 * Where each polling subscription stands with its provider (decisions.md section 5): the cursor
 * (`since`, ETag, baseline, watermark, the issues delivered within its overlap), when it polls next (the cadence holds across restarts),
 * and how many back-offs in a row it has met. A table with a database, a map without; deleting
 * the subscription deletes its row. Never in the log, never in a public form.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { PollCursor } from "../../domain/triggers/Polling.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"

export interface PollState {
  readonly cursor: PollCursor
  /** Epoch milliseconds. */
  readonly nextPollAt: number
  readonly failures: number
}

export interface PollCursorsShape {
  readonly load: (subscriptionId: string) => Effect.Effect<PollState | undefined, StoreUnavailable>
  readonly save: (subscriptionId: string, state: PollState) => Effect.Effect<void, StoreUnavailable>
  readonly remove: (subscriptionId: string) => Effect.Effect<void, StoreUnavailable>
}

export class PollCursors extends Context.Service<PollCursors, PollCursorsShape>()("app/infra/triggers/PollCursors") {}

export const pollCursorMigrations: ReadonlyArray<Migration> = [{
  id: 401,
  name: "trigger_poll_cursors",
  statements: [
    `CREATE TABLE trigger_poll_cursors (
      subscription_id text PRIMARY KEY,
      cursor jsonb NOT NULL,
      next_poll_at timestamptz NOT NULL,
      failures integer NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  ]
}]

export const layerMemory: Layer.Layer<PollCursors> = Layer.sync(PollCursors, () => {
  const states = new Map<string, PollState>()
  return PollCursors.of({
    load: (subscriptionId) => Effect.sync(() => states.get(subscriptionId)),
    save: (subscriptionId, state) => Effect.sync(() => void states.set(subscriptionId, state)),
    remove: (subscriptionId) => Effect.sync(() => void states.delete(subscriptionId))
  })
})

const CursorJson = Schema.Struct({
  since: Schema.String,
  etag: Schema.optionalKey(Schema.String),
  baseline: Schema.String,
  watermark: Schema.optionalKey(Schema.String),
  opened: Schema.optionalKey(Schema.Array(Schema.Struct({ id: Schema.Number, createdAt: Schema.String })))
})
const decodeCursor = Schema.decodeUnknownSync(CursorJson)

export const layerPg: Layer.Layer<PollCursors, never, SqlClient.SqlClient> = Layer.effect(
  PollCursors,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const unavailable = Effect.mapError((cause: unknown) => new StoreUnavailable({ cause }))
    return PollCursors.of({
      load: (subscriptionId) =>
        sql<{ cursor: unknown; next_poll_at: Date; failures: number }>`
          SELECT cursor, next_poll_at, failures FROM trigger_poll_cursors WHERE subscription_id = ${subscriptionId}`.pipe(
          Effect.map((rows) => {
            const row = rows[0]
            if (row === undefined) return undefined
            const cursor = decodeCursor(typeof row.cursor === "string" ? JSON.parse(row.cursor) : row.cursor)
            return { cursor, nextPollAt: row.next_poll_at.getTime(), failures: Number(row.failures) }
          }),
          unavailable
        ),
      save: (subscriptionId, state) =>
        sql`INSERT INTO trigger_poll_cursors (subscription_id, cursor, next_poll_at, failures)
            VALUES (${subscriptionId}, ${JSON.stringify(state.cursor)}::jsonb, ${new Date(state.nextPollAt)}, ${state.failures})
            ON CONFLICT (subscription_id) DO UPDATE SET cursor = EXCLUDED.cursor, next_poll_at = EXCLUDED.next_poll_at,
              failures = EXCLUDED.failures, updated_at = now()`.pipe(Effect.asVoid, unavailable),
      remove: (subscriptionId) => sql`DELETE FROM trigger_poll_cursors WHERE subscription_id = ${subscriptionId}`.pipe(Effect.asVoid, unavailable)
    })
  })
)
