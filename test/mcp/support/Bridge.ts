/**
 * A tiny node:http server that hands every request on `/mcp` to the gateway's `handle` as a web
 * `Request` and streams its web `Response` back: the mount the HTTP server will do, for tests,
 * until the gateway is mounted on the service's own server.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { AddressInfo } from "node:net"

export interface Bridge {
  readonly url: string
  readonly close: () => Promise<void>
}

const toRequest = (req: IncomingMessage, signal: AbortSignal): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  const url = `http://${req.headers.host ?? "127.0.0.1"}${req.url ?? "/"}`
  const hasBody = req.method !== "GET" && req.method !== "HEAD"
  return new Request(url, {
    method: req.method ?? "GET",
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {})
  } as RequestInit)
}

const send = async (response: Response, res: ServerResponse) => {
  res.writeHead(response.status, [...response.headers].flat())
  if (response.body === null) return void res.end()
  res.flushHeaders()
  const reader = response.body.getReader()
  res.on("close", () => void reader.cancel().catch(() => undefined))
  try {
    while (true) {
      const { done, value } = await reader.read()
      if (done) break
      res.write(value)
    }
  } catch {
    // The client went away.
  }
  res.end()
}

export const startBridge = (handle: (request: Request) => Promise<Response>): Promise<Bridge> =>
  new Promise((resolve) => {
    const server = createServer((req, res) => {
      if (!(req.url ?? "").startsWith("/mcp")) {
        res.writeHead(404).end()
        return
      }
      const aborter = new AbortController()
      res.on("close", () => {
        if (!res.writableFinished) aborter.abort()
      })
      handle(toRequest(req, aborter.signal)).then(
        (response) => send(response, res),
        () => res.writeHead(500).end()
      )
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/mcp`,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
