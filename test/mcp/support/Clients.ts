/**
 * SDK clients for the gateway's tests: the official `Client` over `StreamableHTTPClientTransport`
 * with the service's bearer key, with or without the tasks capability.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { ClientCapabilities } from "@modelcontextprotocol/sdk/types.js"
import { KEY } from "../../support/Service.ts"

export interface ConnectOptions {
  readonly key?: string
  readonly headers?: Record<string, string>
  /** `tasks` (the capability), `experimental` (the older alias) or none. */
  readonly tasks?: "tasks" | "experimental" | "none"
  /**
   * POSTs accept JSON only, not SSE: the gateway then answers its common requests without the
   * SDK's `Server` (mcp/FastPath.ts), and everything else through it, as JSON.
   */
  readonly jsonOnly?: boolean
}

const acceptingJsonOnly: typeof fetch = (input, init) => {
  if (init?.method !== "POST") return fetch(input, init)
  const headers = new Headers(init.headers)
  headers.set("accept", "application/json")
  return fetch(input, { ...init, headers })
}

export interface Connected {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
  readonly close: () => Promise<void>
}

const TASKS = { list: {}, cancel: {}, requests: {} }

export const capabilitiesFor = (tasks: ConnectOptions["tasks"]): ClientCapabilities =>
  tasks === "tasks" ? { tasks: TASKS } : tasks === "experimental" ? { experimental: { tasks: TASKS } } : {}

export const connect = async (url: string, options: ConnectOptions = {}): Promise<Connected> => {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${options.key ?? KEY}`, ...options.headers } },
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
    ...(options.jsonOnly === true ? { fetch: acceptingJsonOnly } : {})
  })
  const client = new Client({ name: "gateway-test", version: "1.0.0" }, { capabilities: capabilitiesFor(options.tasks ?? "tasks") })
  await client.connect(transport)
  return {
    client,
    transport,
    close: async () => {
      await transport.terminateSession().catch(() => undefined)
      await client.close()
    }
  }
}
