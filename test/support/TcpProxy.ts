/**
 * A TCP proxy in front of Postgres, for tests of what the service does when the database goes
 * away without the process dying: `pause` stops forwarding (connections stay open and silent,
 * as behind a dead link), `resume` lets the held bytes through, `cut` resets every connection.
 */
import { createServer, type Server, Socket } from "node:net"

export interface TcpProxy {
  /** `url` with its host and port replaced by the proxy's. */
  readonly url: (url: string) => string
  readonly pause: () => void
  readonly resume: () => void
  readonly cut: () => void
  readonly close: () => Promise<void>
}

export const startTcpProxy = async (target: string): Promise<TcpProxy> => {
  const { hostname, port } = new URL(target)
  const pairs = new Set<readonly [Socket, Socket]>()
  let paused = false
  const server: Server = createServer((client) => {
    const upstream = new Socket()
    const pair = [client, upstream] as const
    pairs.add(pair)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", end).on("close", end)
    upstream.on("error", end).on("close", end)
    upstream.connect(Number(port || 5432), hostname || "127.0.0.1")
    client.pipe(upstream)
    upstream.pipe(client)
    if (paused) {
      client.pause()
      upstream.pause()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("expected a TCP address")
  const each = (f: (socket: Socket) => void) => {
    for (const [client, upstream] of pairs) {
      f(client)
      f(upstream)
    }
  }
  return {
    url: (url) => {
      const parsed = new URL(url)
      parsed.hostname = "127.0.0.1"
      parsed.port = String(address.port)
      return parsed.toString()
    },
    pause: () => {
      paused = true
      each((socket) => socket.pause())
    },
    resume: () => {
      paused = false
      each((socket) => socket.resume())
    },
    cut: () => each((socket) => socket.resetAndDestroy()),
    close: () =>
      new Promise((resolve) => {
        each((socket) => socket.destroy())
        server.close(() => resolve())
      })
  }
}
