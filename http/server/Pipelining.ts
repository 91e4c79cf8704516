/**
 * Pipelined requests (several sent on one connection before the first answer), handled one after
 * the other. RFC 9112 section 9.3.2 lets a server handle them side by side only when all of them
 * are safe, and Node starts each as soon as it is parsed; so a request pipelined behind others on
 * its connection (the answer being written there belongs to an earlier one) waits until they are
 * answered, and a list sent after an upload sees the upload. When an answer before it closes the
 * connection (`Connection: close`, or the client went away), the request is not handled at all
 * (RFC 9112 section 9.6): it ends interrupted, as a request whose client left.
 *
 * One queue per connection, with one listener on the answer being written and one on the
 * connection however deep the pipeline: each finished answer wakes only the request whose turn
 * it is.
 */
import { Effect } from "effect"
import { IncomingMessage, type ServerResponse } from "node:http"
import type { Socket } from "node:net"

type PendingResponse = ServerResponse & { readonly req?: IncomingMessage }
type Connection = Socket & { readonly _httpMessage?: PendingResponse | null }

/** The requests of one connection waiting for their turn, by request; each is resumed once. */
interface Queue {
  readonly waiting: Map<IncomingMessage, (turn: boolean) => void>
  /** The answer being watched (its `finish`), while some request waits. */
  watched: PendingResponse | undefined
  readonly onFinish: () => void
  readonly onClose: () => void
}

const queues = new WeakMap<Connection, Queue>()

/** Node hands the connection to the next answer as the one before finishes, unless that one closes it. */
const advance = (socket: Connection, queue: Queue) => {
  queue.watched = undefined
  const now = socket._httpMessage
  if (socket.destroyed || now == null) return release(socket, queue)
  if (now.req !== undefined) {
    const resume = queue.waiting.get(now.req)
    if (resume !== undefined) {
      queue.waiting.delete(now.req)
      resume(true)
    }
  }
  watch(socket, queue)
}

/** Watches the answer being written while a request waits; stops when none does. */
const watch = (socket: Connection, queue: Queue) => {
  if (queue.waiting.size === 0) return release(socket, queue)
  const now = socket._httpMessage
  if (socket.destroyed || now == null) return release(socket, queue)
  if (queue.watched === now) return
  queue.watched?.off("finish", queue.onFinish)
  queue.watched = now
  now.once("finish", queue.onFinish)
}

/** Ends every wait (the connection goes to no one) and forgets the queue. */
const release = (socket: Connection, queue: Queue) => {
  queue.watched?.off("finish", queue.onFinish)
  queue.watched = undefined
  socket.off("close", queue.onClose)
  queues.delete(socket)
  const waiting = [...queue.waiting.values()]
  queue.waiting.clear()
  for (const resume of waiting) resume(false)
}

const queueOf = (socket: Connection): Queue => {
  const existing = queues.get(socket)
  if (existing !== undefined) return existing
  const queue: Queue = {
    waiting: new Map(),
    watched: undefined,
    onFinish: () => advance(socket, queue),
    onClose: () => release(socket, queue)
  }
  queues.set(socket, queue)
  socket.once("close", queue.onClose)
  return queue
}

/**
 * What a request does before it is handled: nothing (undefined) for the usual request, alone on
 * its connection; else wait for its turn, or end interrupted when the connection closes first.
 */
export const pipelinedBehind = (source: unknown): Effect.Effect<void> | undefined => {
  if (!(source instanceof IncomingMessage)) return undefined
  const socket = source.socket as Connection | null
  if (socket === null) return undefined
  const head = socket._httpMessage
  if (head?.req === source) return undefined
  // The connection already went to no one: an answer before this request closed it.
  if (head == null || socket.destroyed) return Effect.interrupt
  return Effect.callback<void>((resume) => {
    const queue = queueOf(socket)
    queue.waiting.set(source, (turn) => resume(turn ? Effect.void : Effect.interrupt))
    watch(socket, queue)
    return Effect.sync(() => {
      queue.waiting.delete(source)
    })
  })
}
