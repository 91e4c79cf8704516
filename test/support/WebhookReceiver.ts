/**
 * A local HTTPS webhook receiver for delivery tests: a self-signed certificate for 127.0.0.1
 * (trusted by the service through NODE_EXTRA_CA_CERTS), every request recorded with its raw
 * body, and a per-request answer chosen by the test.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface Certificate {
  readonly certPath: string
  readonly cert: string
  readonly key: string
}

export const makeCertificate = (): Certificate => {
  const dir = mkdtempSync(join(tmpdir(), "webhook-cert-"))
  const certPath = join(dir, "cert.pem")
  const keyPath = join(dir, "key.pem")
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    "-keyout", keyPath, "-out", certPath,
    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"
  ], { stdio: "ignore" })
  return { certPath, cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8") }
}

export interface Received {
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly rawBody: string
  readonly at: number
  /** Set once the answer has been sent. */
  answeredAt?: number
}

export interface Answer {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  /** Waits before answering (a promise to hold the request until the test releases it). */
  readonly delayMs?: number
  readonly hold?: Promise<void>
}

export type Responder = (request: Received, index: number) => Answer

export interface Receiver {
  readonly port: number
  readonly url: (path: string) => string
  readonly received: Array<Received>
  respond: Responder
  readonly close: () => Promise<void>
}

export const startReceiver = async (certificate: Certificate, respond: Responder = () => ({ status: 200 })): Promise<Receiver> => {
  const received: Array<Received> = []
  const receiver = { respond } as { respond: Responder }
  const server: Server = createServer({ cert: certificate.cert, key: certificate.key }, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", async () => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value
      const entry: Received = { path: req.url ?? "", headers, rawBody: Buffer.concat(chunks).toString("utf8"), at: Date.now() }
      received.push(entry)
      const answer = receiver.respond(entry, received.length - 1)
      if (answer.hold !== undefined) await answer.hold
      if (answer.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, answer.delayMs))
      if (res.destroyed) return
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.status === 200 ? "ok" : "no")
      entry.answeredAt = Date.now()
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("expected a TCP address")
  return {
    port: address.port,
    url: (path) => `https://127.0.0.1:${address.port}${path}`,
    received,
    get respond() {
      return receiver.respond
    },
    set respond(next: Responder) {
      receiver.respond = next
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** Polls until `check` holds, or fails after `timeoutMs`. */
export const eventually = async <A>(check: () => A | undefined | Promise<A | undefined>, timeoutMs = 10_000, what = "condition"): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
