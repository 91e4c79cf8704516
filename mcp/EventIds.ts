/**
 * SSE event ids of `/mcp` streams (MCP 2025-11-25, "Resumability": an id MUST be unique across
 * all streams of its session, and a resumption MUST NOT replay what another stream would have
 * carried).
 *
 * - A notification from the event log has the event's log position, `tx:seq`: one log event is
 *   one message of a session, and a GET stream resuming after it reads the log from there.
 * - Every other frame (a priming event, a connection's expiry, and everything a POST stream
 *   sends) gets the position its stream had reached plus a tag of its own stream and a counter,
 *   `tx:seq:<kind><tag>.<n>`, `kind` being `g` on a GET stream and `p` on a POST stream.
 *
 * A GET with `Last-Event-ID` of a GET stream resumes after its position. One of a POST stream
 * (a client resuming a broken POST answer) cannot be replayed, since a POST stream's messages are
 * not kept, and must not be answered with the GET stream's notifications, past or future: it is
 * 405, with no stream (McpGateway.ts).
 *
 * Clients see these ids sealed (Secrets.ts, under SERVICE_SECRET_KEY, so that any process of the
 * service opens them): a log position counts every event of every project, and a session that
 * could read it would see how busy the others are (outside audit). Each is sealed with its
 * session's id as context, so it opens only for that session: another session's id is none of
 * this one's (outside audit: it was taken as a place to resume from).
 */
import { randomBytes } from "node:crypto"
import { formatPosition, parsePosition, type Position } from "../infra/eventlog/EventStore.ts"
import type { SecretsShape } from "../infra/access/Secrets.ts"

export type StreamKind = "g" | "p"

/** Where a `Last-Event-ID` resumes: after its position, or (a POST stream's) nowhere: `FromNow`. */
export type Resumption =
  | { readonly _tag: "After"; readonly position: Position }
  | { readonly _tag: "FromNow" }

export interface EventIds {
  /** The id of a log event's notification to session `sessionId`. */
  readonly logEventId: (sessionId: string, position: Position) => string
  /** Ids for the frames of one stream of `sessionId` that are no log event: unique to that stream. */
  readonly frameIds: (sessionId: string, kind: StreamKind) => (position: Position) => string
  /** Where an id a client of `sessionId` sent back resumes; undefined when it is none of that session's. */
  readonly parse: (sessionId: string, id: string) => Resumption | undefined
}

const EVENT_ID = /^(\d{1,20}:\d{1,20})(?::([gp])[A-Za-z0-9_-]{1,16}\.\d{1,12})?$/

/** An opened id: `tx:seq`, or `tx:seq:<kind><tag>.<n>`. */
const parsePlain = (id: string): Resumption | undefined => {
  const match = EVENT_ID.exec(id)
  const position = match?.[1] === undefined ? undefined : parsePosition(match[1])
  if (position === undefined) return undefined
  return match?.[2] === "p" ? { _tag: "FromNow" } : { _tag: "After", position }
}

export const makeEventIds = (secrets: Pick<SecretsShape, "seal" | "open">): EventIds => ({
  logEventId: (sessionId, position) => secrets.seal(formatPosition(position), sessionId),
  frameIds: (sessionId, kind) => {
    const tag = `${kind}${randomBytes(6).toString("base64url")}`
    let next = 0
    return (position) => secrets.seal(`${formatPosition(position)}:${tag}.${next++}`, sessionId)
  },
  parse: (sessionId, id) => {
    const plain = id.length > 512 ? undefined : secrets.open(id, sessionId)
    return plain === undefined ? undefined : parsePlain(plain)
  }
})
