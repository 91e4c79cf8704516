/**
 * Local HTTP(S) servers on 127.0.0.1 and a random port, closed with the test's scope. Every
 * request is recorded (method, path, headers, body) so tests can check what was sent, and
 * connections are counted so tests can prove that a refused request never connected.
 */
import { Effect, type Scope } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

export type Handler = (request: Recorded, response: http.ServerResponse) => void

export interface LocalServer {
  readonly url: string
  readonly port: number
  readonly requests: ReadonlyArray<Recorded>
  readonly connections: () => number
}

export interface TlsMaterial {
  readonly certPath: string
  readonly cert: string
  readonly key: string
}

/** A self-signed certificate for 127.0.0.1 and localhost, made with the system openssl. */
export const makeSelfSignedCert = (): TlsMaterial => {
  const dir = mkdtempSync(join(tmpdir(), "outbound-tls-"))
  const certPath = join(dir, "cert.pem")
  const keyPath = join(dir, "key.pem")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
    "-keyout", keyPath, "-out", certPath, "-days", "1", "-subj", "/CN=localhost",
    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"
  ], { stdio: "ignore" })
  return { certPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") }
}

export const startServer = (handler: Handler, tls?: TlsMaterial): Effect.Effect<LocalServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: http.Server; info: LocalServer }>((resolve) => {
        const requests: Array<Recorded> = []
        let connections = 0
        const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
          const chunks: Array<Buffer> = []
          req.on("data", (chunk: Buffer) => chunks.push(chunk))
          req.on("end", () => {
            const recorded = {
              method: req.method ?? "",
              path: req.url ?? "",
              headers: req.headers,
              body: Buffer.concat(chunks).toString("utf8")
            }
            requests.push(recorded)
            handler(recorded, res)
          })
        }
        const server = tls === undefined ? http.createServer(listener) : https.createServer({ cert: tls.cert, key: tls.key }, listener)
        server.on(tls === undefined ? "connection" : "secureConnection", () => {
          connections += 1
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          const scheme = tls === undefined ? "http" : "https"
          resolve({ server, info: { url: `${scheme}://127.0.0.1:${port}`, port, requests, connections: () => connections } })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ info }) => info))

export const json = (response: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

/** A port on 127.0.0.1 with nothing listening (bound, then closed). */
export const closedPort = (): Effect.Effect<number> =>
  Effect.promise(() =>
    new Promise<number>((resolve) => {
      const server = http.createServer()
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        server.close(() => resolve(port))
      })
    })
  )

/** A promise and the function that settles it, for events observed inside server handlers. */
export const latch = <A>() => {
  const holder: { resolve?: (value: A) => void } = {}
  const promise = new Promise<A>((resolve) => {
    holder.resolve = resolve
  })
  return { promise, resolve: (value: A) => holder.resolve?.(value) }
}
