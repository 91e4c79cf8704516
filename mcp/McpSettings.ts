/**
 * The gateway's configuration (decisions.md section 1), read here through Effect's `Config`
 * where it is used, so the gateway needs nothing from the composition root.
 *
 * Transport security (decisions.md section 7, DNS rebinding): a request with an `Origin` passes
 * only for SERVICE_BASE_URL's origin or one of SERVICE_MCP_ALLOWED_ORIGINS. When the service is
 * reachable on loopback only (it listens on a loopback address, as it does by default with the
 * development key) and the base URL names a loopback host, the `Host` header must name a
 * loopback host too (any port), as the MCP reference servers do for a local server: a rebinding
 * page reaches 127.0.0.1 under its own name. A service listening on the network serves clients
 * that name it by whatever host they reach it under.
 */
import { Effect } from "effect"
import { listenHost } from "../infra/access/DevKey.ts"
import { ConfigInvalid, httpUrl, integer, list, oneOf, optionalId } from "../infra/Settings.ts"

export type DiscoveryMode = "catalog" | "search"

export interface McpSettingsShape {
  readonly tools: DiscoveryMode
  /** Origins allowed in an `Origin` header, normalized (`scheme://host[:port]`, lower case). */
  readonly allowedOrigins: ReadonlySet<string>
  /** SERVICE_USER_ID: the gateway-configured user, first in precedence. */
  readonly userId: string | undefined
  readonly baseUrl: string
  /** Whether `Host` must name a loopback host (the service listens on loopback, and the base URL names it). */
  readonly loopbackHostsOnly: boolean
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"])

/** The host part of a `Host` header or URL host, without its port, lower case. */
export const hostName = (host: string): string => {
  const lower = host.trim().toLowerCase()
  if (lower.startsWith("[")) return lower.slice(0, lower.indexOf("]") + 1)
  const colon = lower.lastIndexOf(":")
  return colon < 0 ? lower : lower.slice(0, colon)
}

export const isLoopbackHost = (host: string): boolean => {
  const name = hostName(host)
  return LOOPBACK_HOSTS.has(name) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
}

/** Whether a listen address is a loopback one (`127.0.0.1`, `::1`, `localhost`). */
const isLoopbackAddress = (address: string): boolean => isLoopbackHost(address.includes(":") ? `[${address}]` : address)

/** `scheme://host[:port]` of a URL, or undefined when it is not an http(s) URL. */
export const originOf = (value: string): string | undefined => {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  // An origin has no user info: a browser never sends one with it.
  if (url.username !== "" || url.password !== "") return undefined
  return url.protocol === "http:" || url.protocol === "https:" ? url.origin.toLowerCase() : undefined
}

/** Reads and checks the gateway's variables; a bad value stops start-up with one line naming it. */
export const mcpSettings: Effect.Effect<McpSettingsShape, ConfigInvalid> = Effect.gen(function*() {
  const tools = yield* oneOf("SERVICE_MCP_TOOLS", ["catalog", "search"], "catalog")
  const port = yield* integer("SERVICE_PORT", 8080, 0, 65535)
  const baseUrl = yield* httpUrl("SERVICE_BASE_URL", `http://localhost:${port}`)
  const userId = yield* optionalId("SERVICE_USER_ID")
  const allowedOrigins = new Set([new URL(baseUrl).origin.toLowerCase()])
  for (const entry of yield* list("SERVICE_MCP_ALLOWED_ORIGINS")) {
    const origin = originOf(entry)
    if (origin === undefined) {
      return yield* Effect.fail(new ConfigInvalid({ variable: "SERVICE_MCP_ALLOWED_ORIGINS", reason: `"${entry}" is not an http(s) origin` }))
    }
    allowedOrigins.add(origin)
  }
  return {
    tools,
    allowedOrigins,
    userId,
    baseUrl,
    loopbackHostsOnly: isLoopbackHost(new URL(baseUrl).host) && isLoopbackAddress(yield* listenHost)
  }
})
