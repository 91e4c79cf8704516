/**
 * One HTTP call over a given agent (keep-alive, so a test sees what a client pool sees), never
 * rejected: the answer, or the error that cut it. For tests that drive a service under load
 * while its store goes away (PostgresRestart, PostgresHang).
 */
import { type Agent, request } from "node:http"

export interface Outcome {
  /** When it was sent and answered (or cut), ms since the epoch. */
  readonly sent: number
  readonly at: number
  readonly path: string
  readonly status?: number
  readonly body?: string
  readonly retryAfter?: string | undefined
  /** The error code (ECONNRESET, …) when no answer came. */
  readonly error?: string
}

export const call = (agent: Agent, port: number, method: string, path: string, key: string | undefined, body?: unknown): Promise<Outcome> =>
  new Promise((resolve) => {
    const sent = Date.now()
    const payload = body === undefined ? undefined : JSON.stringify(body)
    const headers: Record<string, string> = {}
    if (key !== undefined) headers.authorization = `Bearer ${key}`
    if (payload !== undefined) {
      headers["content-type"] = "application/json"
      headers["content-length"] = String(Buffer.byteLength(payload))
    }
    const req = request({ host: "127.0.0.1", port, path, method, agent, headers }, (res) => {
      let text = ""
      res.on("data", (chunk: Buffer) => (text += chunk.toString()))
      res.on("end", () => resolve({ sent, at: Date.now(), path, status: res.statusCode ?? 0, body: text, retryAfter: res.headers["retry-after"] }))
    })
    req.on("error", (error: NodeJS.ErrnoException) => resolve({ sent, at: Date.now(), path, error: error.code ?? error.message }))
    req.end(payload)
  })
