/**
 * The HTTP side of a clean stop (decisions.md section 9, SIGTERM): stop accepting connections,
 * answer every request already received, let the actors finish their attempts in flight
 * (infra/actors/Shutdown.ts), all within STOP_WITHIN_MS, and only then close what is left.
 *
 * Why not Node's `server.close()` alone: it also closes every idle keep-alive connection at
 * once, and a client that has just written its next request on one of them sees a reset. Here
 * the listener closes first, answers carry `Connection: close` from then on (Edge.ts, through
 * `closing`), so each busy connection ends after its answer, and idle ones are closed only once
 * nothing has been in flight for a moment. Server-sent event streams (MCP) never end by
 * themselves: they do not hold the stop up, and close with the rest.
 */
import { Clock, Effect } from "effect"
import type { Server } from "node:http"
import { Server as NetServer, type Socket } from "node:net"
import type { ShutdownShape } from "../../infra/actors/Shutdown.ts"
import type { InFlight } from "./RequestLog.ts"

/** How long a stop lets work in flight finish (decisions.md section 9). */
export const STOP_WITHIN_MS = 10_000

/** Idle connections are closed once nothing has been in flight for this long. */
const QUIET_MS = 200

const POLL_MS = 10

/** After the last answer, how long connections get to close by themselves. */
const LINGER_MS = 500

/** The next SIGTERM or SIGINT the process receives. */
const nextSignal = Effect.callback<NodeJS.Signals>((resume) => {
  const on = (signal: NodeJS.Signals) => {
    off()
    resume(Effect.succeed(signal))
  }
  const off = () => {
    process.off("SIGTERM", on)
    process.off("SIGINT", on)
  }
  process.on("SIGTERM", on)
  process.on("SIGINT", on)
  return Effect.sync(off)
})

/**
 * While a stop runs, a further signal means "now", as operators expect of a second Ctrl-C: the
 * stop's deadline becomes now, so what is in flight is cut, and the process still closes its
 * layers and gives its leases up. A third exits at once, leases and all (peers take them over
 * when they expire).
 */
const hurriedBySignals = (shutdown: ShutdownShape) =>
  Effect.gen(function*() {
    const second = yield* nextSignal
    yield* Effect.logWarning("stopping: a second signal; cutting what is in flight now", { signal: second })
    shutdown.hurry()
    const third = yield* nextSignal
    yield* Effect.logWarning("stopping: a third signal; exiting at once", { signal: third })
    process.exit(1)
  })

export interface TrackedServer {
  /** Makes the Node server (as NodeHttpServer.layer asks) and starts tracking it. */
  readonly create: () => Server
  /** Requests being answered: the edge counts them (Edge.ts). */
  readonly inFlight: InFlight
  /** The clean stop; logs what it had to cut short. */
  readonly drain: (shutdown: ShutdownShape) => Effect.Effect<void>
}

export const trackServer = (make: () => Server): TrackedServer => {
  let server: Server | undefined
  const sockets = new Set<Socket>()
  // Counted by the edge from a request's arrival to its answer (a stream's answer is its
  // headers: an event stream does not hold the stop up). Per connection, not per request, is
  // what the server itself tracks here.
  const flight: InFlight = { count: 0, started: 0 }

  const create = () => {
    const created = make()
    created.on("connection", (socket: Socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
    })
    server = created
    return created
  }

  const inFlight = () => flight.count
  const requestsSeen = () => flight.started
  let seen = 0
  let quietSince = 0

  const drain = (shutdown: ShutdownShape) =>
    Effect.gen(function*() {
      const node = server
      if (node === undefined || !node.listening) return
      const clock = yield* Clock.Clock
      // The stop's deadline is the shutdown's: a second signal brings it forward (Shutdown.hurry).
      yield* Effect.forkChild(hurriedBySignals(shutdown))
      const stopping = shutdown.stop(STOP_WITHIN_MS)
      const left = () => shutdown.remainingMs()
      // The listener only: connections stay, and answer what they have received.
      NetServer.prototype.close.call(node)
      yield* Effect.logInfo("stopping: no new connections; finishing the requests, executions and webhook attempts in flight", {
        requestsInFlight: inFlight(),
        withinMs: STOP_WITHIN_MS
      })
      // Done when nothing is in flight and nothing new arrived for QUIET_MS (a request written on
      // a kept-alive connection just before its `Connection: close` answer).
      const requests = Effect.gen(function*() {
        while (left() > 0) {
          const now = clock.currentTimeMillisUnsafe()
          if (inFlight() > 0 || requestsSeen() !== seen) {
            seen = requestsSeen()
            quietSince = now
          } else if (now - quietSince >= QUIET_MS) return
          yield* Effect.sleep(POLL_MS)
        }
      })
      const [unfinished] = yield* Effect.all([stopping, requests], { concurrency: 2 })
      // Nothing in flight for a moment: idle connections close, busy ones after their answer
      // (which says `Connection: close`). Those still open a moment later carry an event stream
      // (or whatever the deadline cut), and go last.
      const lingerUntil = clock.currentTimeMillisUnsafe() + LINGER_MS
      while (true) {
        node.closeIdleConnections()
        if (left() <= 0 || sockets.size === 0 || (inFlight() === 0 && clock.currentTimeMillisUnsafe() >= lingerUntil)) break
        yield* Effect.sleep(POLL_MS)
      }
      const cut = inFlight()
      const open = sockets.size
      node.closeAllConnections()
      if (cut > 0 || unfinished.length > 0) {
        yield* Effect.logWarning("stopping: cut short (the deadline passed, or a second signal came)", { requests: cut, actors: unfinished.join(", ") || "none" })
      }
      yield* Effect.logInfo("stopped serving", { connectionsClosed: open })
    })

  return { create, drain, inFlight: flight }
}
