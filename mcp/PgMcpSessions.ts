/**
 * MCP sessions in Postgres: one row per session in `mcp_sessions`, so a session created on one
 * process is served by every process on the same database and survives a restart. Times are
 * epoch milliseconds from the gateway's clock (as in the memory store), so both stores expire a
 * session at the same instant.
 */
import { Clock, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { onStorage } from "../infra/eventlog/Database.ts"
import { formatPosition, parsePosition, StoreUnavailable } from "../infra/eventlog/EventStore.ts"
import type { Migration } from "../infra/eventlog/PgMigrations.ts"
import { inOrder, makeBatcher } from "../infra/Batcher.ts"
import { layerMemory, type McpSession, McpSessions } from "./McpSessions.ts"

/** The sessions table (migration ids 600-699 belong to the MCP gateway). */
export const mcpMigrations: ReadonlyArray<Migration> = [
  {
    id: 600,
    name: "mcp_sessions",
    statements: [
      `CREATE TABLE mcp_sessions (
        session_id text COLLATE "C" PRIMARY KEY,
        key_hash text NOT NULL,
        project_id text NOT NULL,
        pinned_user_id text,
        user_id text,
        protocol_version text NOT NULL,
        client_capabilities jsonb NOT NULL,
        tasks boolean NOT NULL,
        stream_token text,
        created_ms bigint NOT NULL,
        expires_ms bigint NOT NULL
      )`,
      // The sweep takes the oldest expiries first.
      `CREATE INDEX mcp_sessions_expiry ON mcp_sessions (expires_ms)`
    ]
  },
  {
    id: 601,
    name: "mcp_sessions_created_position",
    // The log position at creation (`tx:seq`); null on rows made before it was kept.
    statements: [`ALTER TABLE mcp_sessions ADD COLUMN created_position text`]
  }
]

interface SessionRow {
  readonly session_id: string
  readonly key_hash: string
  readonly project_id: string
  readonly pinned_user_id: string | null
  readonly user_id: string | null
  readonly protocol_version: string
  readonly client_capabilities: unknown
  readonly tasks: boolean
  readonly stream_token: string | null
  readonly created_ms: bigint | number | string
  readonly created_position: string | null
  readonly expires_ms: bigint | number | string
}

const decodeJson = Schema.decodeUnknownSync(Schema.Json)

const toSession = (row: SessionRow): McpSession => ({
  sessionId: row.session_id,
  keyHash: row.key_hash,
  projectId: row.project_id,
  pinnedUserId: row.pinned_user_id ?? undefined,
  userId: row.user_id ?? undefined,
  protocolVersion: row.protocol_version,
  // jsonb comes back parsed; it was written from a decoded JSON value.
  clientCapabilities: decodeJson(row.client_capabilities),
  tasks: row.tasks,
  createdMs: Number(row.created_ms),
  createdPosition: row.created_position === null ? undefined : parsePosition(row.created_position),
  expiresMs: Number(row.expires_ms),
  streamToken: row.stream_token ?? undefined
})

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

/** Sessions read in one statement at most; more wait for the next. */
const MAX_READS = 256

export const makePg = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Every request names its session: the reads of requests arriving together share one
  // statement (Batcher.ts), instead of a round trip each.
  const readRow = yield* makeBatcher<string, SessionRow | undefined, StoreUnavailable>({
    maxBatch: MAX_READS,
    serve: inOrder((ids) =>
      sql.unsafe<SessionRow>("SELECT * FROM mcp_sessions WHERE session_id = ANY($1)", [[...new Set(ids)]]).pipe(
        Effect.map((rows) => {
          const byId = new Map(rows.map((row) => [row.session_id, row]))
          return ids.map((id) => byId.get(id))
        }),
        Effect.mapError(unavailable)
      ))
  })
  return McpSessions.of({
    create: (session) =>
      sql`INSERT INTO mcp_sessions (session_id, key_hash, project_id, pinned_user_id, user_id, protocol_version,
            client_capabilities, tasks, stream_token, created_ms, created_position, expires_ms)
          VALUES (${session.sessionId}, ${session.keyHash}, ${session.projectId}, ${session.pinnedUserId ?? null},
            ${session.userId ?? null}, ${session.protocolVersion}, ${JSON.stringify(session.clientCapabilities)}::jsonb,
            ${session.tasks}, ${session.streamToken ?? null}, ${session.createdMs},
            ${session.createdPosition === undefined ? null : formatPosition(session.createdPosition)}, ${session.expiresMs})`.pipe(
        Effect.asVoid,
        Effect.mapError(unavailable)
      ),
    get: Effect.fnUntraced(function*(sessionId) {
      const row = yield* readRow(sessionId)
      if (row === undefined) return undefined
      const session = toSession(row)
      if (session.expiresMs > (yield* Clock.currentTimeMillis)) return session
      yield* sql`DELETE FROM mcp_sessions WHERE session_id = ${sessionId}`
      return undefined
    }, Effect.mapError(unavailable)),
    remove: (sessionId) =>
      sql<{ readonly session_id: string }>`DELETE FROM mcp_sessions WHERE session_id = ${sessionId} RETURNING session_id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.mapError(unavailable)
      ),
    claimStream: (sessionId, token) =>
      sql`UPDATE mcp_sessions SET stream_token = ${token} WHERE session_id = ${sessionId}`.pipe(
        Effect.asVoid,
        Effect.mapError(unavailable)
      ),
    sweep: (limit) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        sql<{ readonly session_id: string }>`
          DELETE FROM mcp_sessions WHERE session_id IN (
            SELECT session_id FROM mcp_sessions WHERE expires_ms <= ${now} ORDER BY expires_ms LIMIT ${limit}
          ) RETURNING session_id`).pipe(Effect.map((rows) => rows.length), Effect.mapError(unavailable))
  })
})

export const layerPg = Layer.effect(McpSessions, makePg)

/** Postgres with a database, memory without. */
export const layer = onStorage(layerMemory, layerPg)
