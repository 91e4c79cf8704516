/**
 * Plain HTTP against `/mcp` for what an SDK client cannot show: headers, status codes, error
 * bodies, SSE frames, a resent JSON-RPC id.
 */
import { KEY } from "../../support/Service.ts"

export const VERSION = "2025-11-25"

export interface RawOptions {
  readonly key?: string | null
  readonly session?: string
  readonly version?: string | null
  readonly accept?: string
  readonly headers?: Record<string, string>
}

export const headersFor = (options: RawOptions = {}): Headers => {
  const headers = new Headers({ "content-type": "application/json", accept: options.accept ?? "application/json, text/event-stream" })
  const key = options.key === undefined ? KEY : options.key
  if (key !== null) headers.set("authorization", `Bearer ${key}`)
  if (options.session !== undefined) headers.set("mcp-session-id", options.session)
  const version = options.version === undefined ? (options.session === undefined ? null : VERSION) : options.version
  if (version !== null) headers.set("mcp-protocol-version", version)
  for (const [name, value] of Object.entries(options.headers ?? {})) headers.set(name, value)
  return headers
}

export const post = (url: string, body: unknown, options: RawOptions = {}): Promise<Response> =>
  fetch(url, { method: "POST", headers: headersFor(options), body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body) })

export const initializeMessage = (version = VERSION, capabilities: unknown = { tasks: {} }, id: number | string = 0) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: version, capabilities, clientInfo: { name: "raw", version: "1.0.0" } }
})

export interface SseEvent {
  readonly id: string | undefined
  readonly data: string
}

/** SSE events of a complete body. */
export const parseSse = (text: string): ReadonlyArray<SseEvent> =>
  text.split("\n\n").filter((block) => block.trim() !== "" && !block.startsWith(":")).map((block) => {
    let id: string | undefined
    const data: Array<string> = []
    for (const line of block.split("\n")) {
      if (line.startsWith("id:")) id = line.slice(3).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart())
    }
    return { id, data: data.join("\n") }
  })

/** The JSON-RPC message of a response, JSON or SSE. */
export const messageOf = async (response: Response): Promise<Record<string, unknown>> => {
  const text = await response.text()
  if ((response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const last = parseSse(text).filter((e) => e.data !== "").at(-1)
    return JSON.parse(last?.data ?? "{}") as Record<string, unknown>
  }
  return JSON.parse(text) as Record<string, unknown>
}

/** A fresh session by raw initialize (and its initialized notification); answers its id. */
export const openSession = async (url: string, options: RawOptions & { readonly capabilities?: unknown; readonly protocol?: string } = {}) => {
  const response = await post(url, initializeMessage(options.protocol ?? VERSION, options.capabilities ?? { tasks: {} }), { ...options, version: null })
  if (response.status !== 200) throw new Error(`initialize answered ${response.status}: ${await response.text()}`)
  await response.text()
  const session = response.headers.get("mcp-session-id") ?? ""
  const initialized = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, {
    ...options,
    session,
    version: options.protocol ?? VERSION
  })
  await initialized.text()
  return session
}

/** Reads an SSE response until `enough` events (priming included) arrived, then stops reading. */
export const readEvents = async (response: Response, enough: number, timeoutMs = 10_000): Promise<ReadonlyArray<SseEvent>> => {
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let text = ""
  const deadline = Date.now() + timeoutMs
  try {
    while (parseSse(text).length < enough && Date.now() < deadline) {
      const next = await Promise.race([
        reader.read(),
        new Promise<{ done: true; value: undefined }>((resolve) => setTimeout(() => resolve({ done: true, value: undefined }), Math.max(1, deadline - Date.now())))
      ])
      if (next.done) break
      text += decoder.decode(next.value, { stream: true })
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
  return parseSse(text)
}
