/**
 * MCP sessions (decisions.md section 7): what `initialize` negotiated, bound to the identity that
 * negotiated it. A session is a row, not a transport: every request loads it by id, so any
 * process can serve any session, and with a database (PgMcpSessions.ts) it outlives a restart.
 *
 * Rows are read on every request rather than cached: a session deleted on one process must be
 * 404 on the next request to any other (one keyed read, well under a millisecond on Postgres).
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { randomBytes } from "node:crypto"
import { encodeIdBody, ID_RANDOM_BYTES } from "../domain/Ids.ts"
import type { Position, StoreUnavailable } from "../infra/eventlog/EventStore.ts"

export interface McpSession {
  readonly sessionId: string
  /** SHA-256 (hex) of the bearer key that created the session: any other key gets 404. */
  readonly keyHash: string
  readonly projectId: string
  /** The pinned user of the key, if it is pinned. */
  readonly pinnedUserId: string | undefined
  /** The session's user: SERVICE_USER_ID, the header at initialize, or the pinned user. */
  readonly userId: string | undefined
  readonly protocolVersion: string
  /** The client's capabilities as sent at initialize. */
  readonly clientCapabilities: Schema.Json
  /** Whether tasks were negotiated (2025-11-25 and `capabilities.tasks` or its experimental alias). */
  readonly tasks: boolean
  readonly createdMs: number
  /**
   * The event log's position when the session was created (as this process had followed it):
   * a resumption of its GET stream reads the log from no earlier. Undefined on rows made before
   * it was kept.
   */
  readonly createdPosition?: Position | undefined
  readonly expiresMs: number
  /** The latest GET stream opened for the session; an older one closes when it sees another. */
  readonly streamToken: string | undefined
}

export interface McpSessionsShape {
  readonly create: (session: McpSession) => Effect.Effect<void, StoreUnavailable>
  /** The session, unless it is unknown, deleted or expired (an expired row is deleted on the way). */
  readonly get: (sessionId: string) => Effect.Effect<McpSession | undefined, StoreUnavailable>
  /** Ends a session; false when there was none. */
  readonly remove: (sessionId: string) => Effect.Effect<boolean, StoreUnavailable>
  /** Records the session's newest GET stream. */
  readonly claimStream: (sessionId: string, token: string) => Effect.Effect<void, StoreUnavailable>
  /** Deletes up to `limit` expired sessions; answers how many. */
  readonly sweep: (limit: number) => Effect.Effect<number, StoreUnavailable>
}

export class McpSessions extends Context.Service<McpSessions, McpSessionsShape>()("app/mcp/McpSessions") {}

/** Sessions live 24 hours from initialize (spec, Limits: MCP). */
export const SESSION_TTL_MS = 24 * 60 * 60 * 1000

/** A new session id: `mcps_` and a time-ordered body with 112 random bits. */
export const newSessionId = (): string => encodeIdBody(Date.now(), randomBytes(ID_RANDOM_BYTES), "mcps")

/** Session ids as `newSessionId` makes them; anything else is unknown without a lookup. */
export const isSessionId = (value: string): boolean => /^mcps_[0-9a-hjkmnp-tv-z]{32}$/.test(value)

export const makeMemory = Effect.sync(() => {
  const rows = new Map<string, McpSession>()
  const live = (sessionId: string, now: number) => {
    const row = rows.get(sessionId)
    if (row !== undefined && row.expiresMs <= now) {
      rows.delete(sessionId)
      return undefined
    }
    return row
  }
  return McpSessions.of({
    create: (session) => Effect.sync(() => void rows.set(session.sessionId, session)),
    get: (sessionId) => Effect.map(Clock.currentTimeMillis, (now) => live(sessionId, now)),
    remove: (sessionId) => Effect.sync(() => rows.delete(sessionId)),
    claimStream: (sessionId, token) =>
      Effect.sync(() => {
        const row = rows.get(sessionId)
        if (row !== undefined) rows.set(sessionId, { ...row, streamToken: token })
      }),
    sweep: (limit) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        let deleted = 0
        for (const [id, row] of rows) {
          if (deleted >= limit) break
          if (row.expiresMs <= now) {
            rows.delete(id)
            deleted++
          }
        }
        return deleted
      })
  })
})

export const layerMemory = Layer.effect(McpSessions, makeMemory)
