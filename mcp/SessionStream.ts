/**
 * The GET stream of a session (spec, "MCP notifications"): task progress and terminal task
 * status (`mcp-task` events, Tasks.ts) and `notifications/tools/list_changed` when a connection of
 * the session's user is created, deleted or expires (catalog mode, sessions with a user).
 *
 * Everything but expiry comes from the event log, so a notification reaches the session
 * whichever process made the change. Each event's SSE id is its log position (`tx:seq`), which
 * is what `Last-Event-ID` resumes from: the stream first reads the log after that position
 * itself, then goes on with the process's follower (LogFeed.ts), skipping what it has already
 * sent. The first frame is a priming event whose id carries the starting position, so a client
 * that reconnects before any notification resumes without a gap (from 2025-11-25 on: older
 * clients cannot take an event without data). An expiry has no log event: the stream's own timer
 * sends it, its id carrying the position last sent. Those two ids add the stream's own tag, so no
 * id repeats in a session (EventIds.ts). A resumed stream sends one list_changed at once when a
 * connection of the user expired since the session began: the client may have been away then.
 *
 * A session has one live GET stream: a newer one (on any process) replaces it. Its claim is an
 * event in the log (`McpStreamClaimed`), which an older stream meets in order and ends at, so
 * nothing committed after the claim goes on both. Every 15 s the stream sends a keep-alive
 * comment and re-reads the session row, ending when the session was deleted, expired, or claimed
 * by a newer stream.
 *
 * A resumption reads the log after its `Last-Event-ID`, but never what was committed before the
 * session existed (it was never the session's to carry): the gateway starts it no earlier than
 * the session's creation position, and events older than the session are passed over (for rows
 * made before that position was kept). An id past the log's end is refused.
 *
 * A GET resuming a POST stream (`Last-Event-ID` of a POST answer) gets no stream: a POST stream's
 * messages are not kept, and the session's notifications belong to its GET stream, which the
 * resumption must not take over (MCP 2025-11-25, "Resumability": no message on two streams, no
 * replay of another stream's). The gateway answers it 405 (McpGateway.ts).
 */
import { Clock, Deferred, Duration, Effect, Exit, Queue, Schema, Stream, type Context } from "effect"
import { isExpired } from "../domain/Connection.ts"
import type { ConnectionsShape } from "../infra/connections/Connections.ts"
import { comparePositions, type EventStoreShape, type Position, type RecordedEvent } from "../infra/eventlog/EventStore.ts"
import type { EventIds } from "./EventIds.ts"
import { CONNECTION_STREAM_TYPE } from "../domain/Connection.ts"
import { type LogFeedShape, MCP_TASK_STREAM_TYPE, sessionOfTaskStream, taskStreamId } from "./LogFeed.ts"
import type { McpSession, McpSessionsShape } from "./McpSessions.ts"
import type { McpSettingsShape } from "./McpSettings.ts"
import { decodeTaskEvent, encodeTaskEvent, type McpStreamClaimed } from "./TaskEvents.ts"
import { newId } from "../infra/Ids.ts"

const KEEPALIVE = Duration.seconds(15)
const HISTORY_BATCH = 500

const ConnectionFact = Schema.Struct({
  connectionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.optionalKey(Schema.String)
})
const decodeConnection = Schema.decodeUnknownOption(ConnectionFact)

type Message = { readonly method: string; readonly params?: { readonly [key: string]: unknown } }

const LIST_CHANGED: Message = { method: "notifications/tools/list_changed" }

const frame = (id: string, message: Message) => `id: ${id}\nevent: message\ndata: ${JSON.stringify({ jsonrpc: "2.0", ...message })}\n\n`

export interface SessionStreamDeps {
  readonly store: EventStoreShape
  readonly feed: LogFeedShape
  readonly sessions: McpSessionsShape
  readonly connections: ConnectionsShape
  readonly settings: McpSettingsShape
  readonly context: Context.Context<never>
  readonly ids: EventIds
}

export const makeSessionStreams = (deps: SessionStreamDeps) => {
  const { connections, feed, ids, sessions, settings, store } = deps
  /** The live stream of each session in this process: ending it is one call. */
  const live = new Map<string, { readonly token: string; readonly end: () => void }>()

  /** The user whose connections change the session's tool list, if its list depends on one. */
  const listUser = (session: McpSession) => (settings.tools === "catalog" ? session.userId : undefined)

  /** The creating user of a connection that was deleted (its first event names the user). */
  const ownerOf = (connectionId: string) =>
    Effect.map(Effect.orDie(store.readStream(`connection-${connectionId}`, 1)), (events) => {
      const first = events[0]
      const fact = first === undefined ? undefined : decodeConnection(first.data)
      return fact?._tag === "Some" ? fact.value.userId : undefined
    })

  /** What one log event tells this session, if anything. */
  const interpret = Effect.fnUntraced(function*(session: McpSession, event: RecordedEvent) {
    if (event.streamType === MCP_TASK_STREAM_TYPE) {
      if (sessionOfTaskStream(event.streamId) !== session.sessionId) return undefined
      const decoded = decodeTaskEvent(event.data)
      return decoded._tag === "Some" && decoded.value.type === "McpTaskNotified" ? decoded.value.notification : undefined
    }
    const user = listUser(session)
    if (event.streamType !== CONNECTION_STREAM_TYPE || user === undefined) return undefined
    const fact = decodeConnection(event.data)
    if (fact._tag === "None" || fact.value.projectId !== session.projectId) return undefined
    const owner = event.type === "ConnectionCreated" ? fact.value.userId : yield* ownerOf(fact.value.connectionId)
    return owner === user ? LIST_CHANGED : undefined
  })

  /**
   * The expiries of the user's connections around now: when the next one expires, if one will,
   * and when the latest one already expired, if one did.
   */
  const expiriesOf = Effect.fnUntraced(function*(session: McpSession, user: string) {
    const now = yield* Clock.currentTimeMillis
    let next: number | undefined
    let latestPast: number | undefined
    let after: string | undefined
    for (let page = 0; page < 100; page++) {
      const { connections: items, hasMore } = yield* connections.list({ projectId: session.projectId, userId: user, limit: 100, after })
      for (const c of items) {
        if (c.expiresAt === undefined) continue
        const at = Date.parse(c.expiresAt)
        if (isExpired(c.expiresAt, now)) latestPast = Math.max(latestPast ?? -Infinity, at)
        else next = Math.min(next ?? Infinity, at)
      }
      after = items.at(-1)?.connectionId
      if (!hasMore || after === undefined) break
    }
    return { next, latestPast }
  })

  const frames = (session: McpSession, from: Position, resumed: boolean, keyValid: Effect.Effect<boolean>) =>
    Stream.callback<string>((out) =>
      Effect.gen(function*() {
        const token = newId("evt")
        const ended = yield* Deferred.make<void>()
        const end = () => void Deferred.doneUnsafe(ended, Exit.void)
        live.get(session.sessionId)?.end()
        live.set(session.sessionId, { token, end })
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            if (live.get(session.sessionId)?.token === token) live.delete(session.sessionId)
          })
        )
        yield* Effect.orDie(sessions.claimStream(session.sessionId, token))
        // The claim in the log ends an older stream of the session on any process when it gets
        // there (below), before it can carry anything committed after it.
        const claim: McpStreamClaimed = { type: "McpStreamClaimed", sessionId: session.sessionId, token }
        yield* Effect.orDie(store.append([{
          streamId: taskStreamId(session.sessionId, `stream_${token}`),
          streamType: MCP_TASK_STREAM_TYPE,
          expectedVersion: 0,
          events: [encodeTaskEvent(claim, newId("evt"))]
        }]))
        // Set once this stream meets its own claim; a later claim is a newer stream's.
        let claimed = false
        const changed = yield* Queue.sliding<void>(1)
        const inbox = yield* feed.subscribeSession(session.sessionId, session.projectId)
        let last = from
        // Frames that are no log event (priming, expiries) get ids of this stream (EventIds.ts).
        const ownId = ids.frameIds(session.sessionId, "g")
        // Empty data confuses clients of versions before 2025-11-25 (the SDK primes only from it).
        if (session.protocolVersion >= "2025-11-25") yield* Queue.offer(out, `id: ${ownId(from)}\nretry: 1000\ndata: \n\n`)
        const user = listUser(session)
        // An expiry has no log event to replay: a resumed stream cannot tell whether the client
        // saw the list_changed of one that fell while no stream was open, so it sends one when a
        // connection of the user expired since the session began.
        if (resumed && user !== undefined) {
          const { latestPast } = yield* expiriesOf(session, user)
          if (latestPast !== undefined && latestPast > session.createdMs) yield* Queue.offer(out, frame(ownId(from), LIST_CHANGED))
        }

        // While catching up with a resumption, what the log held before the session existed is
        // passed over: it was never this session's.
        let catchingUp = true
        const claimOf = (event: RecordedEvent) => {
          // Its type first: a task's notifications (the most of them) are decoded once, by `interpret`.
          if (event.type !== "McpStreamClaimed" || sessionOfTaskStream(event.streamId) !== session.sessionId) return undefined
          const decoded = decodeTaskEvent(event.data)
          return decoded._tag === "Some" && decoded.value.type === "McpStreamClaimed" ? decoded.value : undefined
        }
        /** Carries the event; true when it is a newer stream's claim, which ends this one first. */
        const handle = (event: RecordedEvent): Effect.Effect<boolean> => {
          const other = claimOf(event)
          if (other !== undefined && other.token !== token && claimed) return Effect.succeed(true)
          if (other?.token === token) claimed = true
          return Effect.as(carry(event), false)
        }
        const carry = (event: RecordedEvent) =>
          comparePositions(event.position, last) <= 0 || (catchingUp && event.createdAt < session.createdMs)
            ? Effect.sync(() => {
              if (comparePositions(event.position, last) > 0) last = event.position
            })
            : Effect.flatMap(interpret(session, event), (message) => {
              last = event.position
              if (message === undefined) return Effect.void
              if (message === LIST_CHANGED) Queue.offerUnsafe(changed, undefined)
              return Queue.offer(out, frame(ids.logEventId(session.sessionId, event.position), message))
            })

        // The log after `from`, read here until caught up; then the follower's events.
        const pump = Effect.gen(function*() {
          let cursor = from
          while (true) {
            const batch = yield* Effect.orDie(store.readAll(cursor, HISTORY_BATCH))
            for (const event of batch) {
              if (yield* handle(event)) return
            }
            if (batch.length < HISTORY_BATCH) break
            cursor = batch[batch.length - 1]!.position
          }
          catchingUp = false
          while (true) {
            if (yield* handle(yield* Queue.take(inbox))) return
          }
        })

        // Keep-alive, and the end of the stream once the session is gone or taken over, or the
        // key that opened it was revoked.
        const watch = Effect.gen(function*() {
          while (true) {
            yield* Effect.sleep(KEEPALIVE)
            const now = yield* Effect.orDie(sessions.get(session.sessionId))
            if (now === undefined || (now.streamToken !== undefined && now.streamToken !== token)) return
            if (!(yield* keyValid)) return
            yield* Queue.offer(out, ": keepalive\n\n")
          }
        })

        // Expiries have no log event: wait for the next one, or for a change that may move it.
        const expiries = user === undefined ? Effect.never : Effect.gen(function*() {
          while (true) {
            const { next } = yield* expiriesOf(session, user)
            const wait = next === undefined ? Effect.never : Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(Math.max(0, next - now) + 10))
            const expired = yield* Effect.raceFirst(Effect.as(wait, true), Effect.as(Queue.take(changed), false))
            if (expired) yield* Queue.offer(out, frame(ownId(last), LIST_CHANGED))
          }
        })

        yield* Effect.forkScoped(Effect.raceFirst(Effect.raceFirst(pump, watch), Effect.raceFirst(expiries, Deferred.await(ended))).pipe(
          Effect.ensuring(Queue.end(out))
        ))
      })
    , { bufferSize: 256 })

  return {
    /**
     * The SSE body of a GET stream of `session`, from log position `from`; it ends once `keyValid`
     * says the key that opened it no longer holds (checked with each keep-alive).
     */
    open: (session: McpSession, from: Position, resumed: boolean, keyValid: Effect.Effect<boolean>): ReadableStream<Uint8Array> =>
      Stream.toReadableStreamWith(frames(session, from, resumed, keyValid).pipe(Stream.encodeText), deps.context),
    /** Whether `position` lies past the log's end: no event id of any session names it. */
    pastEnd: (position: Position): Effect.Effect<boolean> =>
      comparePositions(position, feed.position()) <= 0
        ? Effect.succeed(false)
        : Effect.map(Effect.orDie(store.head), (head) => comparePositions(position, head) > 0),
    /** Ends the session's streams in this process (DELETE). */
    end: (sessionId: string) => live.get(sessionId)?.end(),
    /** Ends every stream of this process (shutdown: a stream never ends by itself). */
    endAll: () => {
      for (const stream of live.values()) stream.end()
    }
  }
}
