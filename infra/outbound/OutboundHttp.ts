/**
 * The guarded outbound HTTP client: webhook deliveries, the http toolkit and the provider
 * adapters all leave the process through it. It never follows redirects, bounds every request
 * in time, never keeps more of a response body than the caller asked for (a caller asking for
 * none gets its answer at the headers, while a body of up to 16 KiB drains behind it within the
 * request's deadline, so the keep-alive connection survives), checks literal-IP
 * hosts before connecting and resolved names at connect time (AddressGuard), and reports
 * failures as a small set of sanitized reasons: no transport error text travels upward.
 *
 * Private networks: the policy comes from SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS. A request may
 * set `allowPrivateNetworks: true` to widen it, which is meant ONLY for URLs built from operator
 * configuration (the Slack and GitHub base URLs, which tests and on-premises setups point at
 * private hosts), never for a URL a user supplied. Metadata addresses stay refused either way.
 *
 * Trust: TLS uses Node's default store, which includes NODE_EXTRA_CA_CERTS when it is set at
 * process start. `ca` replaces that store and exists for tests.
 */
import { Context, Effect, Layer, Schema, type Scope } from "effect"
import { Agent, buildConnector } from "undici"
import { boolean } from "../Settings.ts"
import { AddressBlockedError, blockedHost, type GuardPolicy, makeGuardedLookup, type Resolver } from "./AddressGuard.ts"
import { classifyFailure, type FailureReason, failureMessages } from "./OutboundFailure.ts"

export { type FailureReason } from "./OutboundFailure.ts"

export class OutboundHttpError extends Schema.TaggedError<OutboundHttpError>()("OutboundHttpError", {
  reason: Schema.Literals([
    "timeout",
    "connection_refused",
    "dns_failure",
    "tls_error",
    "address_blocked",
    "connection_reset",
    "network_error",
    "invalid_request"
  ]),
  message: Schema.String
}) {}

export interface OutboundRequest {
  readonly method: "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE"
  readonly url: string | URL
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: Uint8Array | string | undefined
  /** Bounds the whole exchange: connect, headers and the body read. */
  readonly timeoutMs: number
  /** Body bytes to keep; the stream is destroyed, not drained, past it. 0 reads nothing. */
  readonly maxBodyBytes: number
  /** Only for URLs built from operator configuration (see the module comment). */
  readonly allowPrivateNetworks?: boolean | undefined
}

export interface OutboundResponse {
  readonly status: number
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** True when the response had more than `maxBodyBytes` bytes. */
  readonly bodyTruncated: boolean
}

export interface OutboundHttpOptions {
  readonly allowPrivateNetworks: boolean
  readonly resolve?: Resolver | undefined
  /** Replaces the default trust store (tests); leave unset to honour NODE_EXTRA_CA_CERTS. */
  readonly ca?: string | ReadonlyArray<string> | undefined
  readonly connectTimeoutMs?: number | undefined
}

const fail = (reason: FailureReason) => new OutboundHttpError({ reason, message: failureMessages[reason] })

const makeAgent = (policy: GuardPolicy, options: OutboundHttpOptions): Agent => {
  const connector = buildConnector({
    lookup: makeGuardedLookup(policy, options.resolve),
    timeout: options.connectTimeoutMs ?? 10_000,
    allowH2: false,
    ...(options.ca === undefined ? {} : { ca: typeof options.ca === "string" ? options.ca : [...options.ca] })
  })
  return new Agent({
    // Literal IPs never reach `lookup`, so they are checked here, before any socket exists.
    connect: (connectOptions, callback) => {
      const blocked = blockedHost(connectOptions.hostname, policy)
      if (blocked !== undefined) {
        callback(new AddressBlockedError(blocked), null)
        return
      }
      connector(connectOptions, callback)
    }
  })
}

const flattenHeaders = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>) => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) out[name.toLowerCase()] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

interface Body extends AsyncIterable<Uint8Array> {
  destroy(): void
  on(event: "error", listener: (error: unknown) => void): unknown
  dump(options: { readonly limit: number }): Promise<unknown>
}

const ignore = () => {}

/**
 * Past this many bytes, an unread body is cut off rather than drained. Below it, a body nobody
 * reads (maxBodyBytes 0: webhook deliveries) is drained in the background, so that its
 * keep-alive connection is reused instead of being torn down and re-negotiated (TLS) per request.
 */
const DRAIN_BYTES = 16 * 1024

/** Lets a small unread body finish behind the caller; the request's deadline still cuts it off. */
const drainBehind = (body: Body): Promise<unknown> => {
  body.on("error", ignore)
  return body.dump({ limit: DRAIN_BYTES }).catch(ignore)
}

/** Reads at most `limit` bytes; `truncated` once a byte past the limit has been seen. */
const readLimited = async (body: Body, limit: number): Promise<{ bytes: Uint8Array; truncated: boolean }> => {
  const chunks: Array<Uint8Array> = []
  let size = 0
  let truncated = false
  try {
    if (limit > 0) {
      for await (const chunk of body) {
        const room = limit - size
        if (chunk.byteLength > room) {
          chunks.push(chunk.subarray(0, room))
          size += room
          truncated = true
          break
        }
        chunks.push(chunk)
        size += chunk.byteLength
      }
    }
  } finally {
    // Destroying instead of draining: a hostile peer cannot make us read (or wait for) more.
    // undici reports an unfinished body's destruction as an error nobody else listens for.
    body.on("error", ignore)
    body.destroy()
  }
  const bytes = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return { bytes, truncated }
}

/** With nothing read, a body is known to exist only from its framing headers. */
const announcesBody = (headers: Readonly<Record<string, string>>): boolean =>
  headers["transfer-encoding"] !== undefined || (headers["content-length"] ?? "0") !== "0"

const preflight = (request: OutboundRequest, policy: GuardPolicy): URL | OutboundHttpError => {
  const url = typeof request.url === "string" ? (URL.canParse(request.url) ? new URL(request.url) : undefined) : request.url
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) return fail("invalid_request")
  if (url.username !== "" || url.password !== "") return fail("invalid_request")
  if (blockedHost(url.hostname, policy) !== undefined) return fail("address_blocked")
  return url
}

/** `controller` aborts the exchange: the deadline here, or the calling fiber's interruption. */
const send = async (agent: Agent, url: URL, request: OutboundRequest, controller: AbortController) => {
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    controller.abort()
  }, request.timeoutMs)
  let draining: Promise<unknown> | undefined
  try {
    const response = await agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: request.headers ?? {},
      body: request.body ?? null,
      signal: controller.signal,
      headersTimeout: request.timeoutMs,
      bodyTimeout: request.timeoutMs
    })
    const headers = flattenHeaders(response.headers)
    const limit = request.method === "HEAD" ? 0 : request.maxBodyBytes
    if (limit === 0) {
      draining = drainBehind(response.body)
      return { status: response.statusCode, headers, body: new Uint8Array(0), bodyTruncated: request.method !== "HEAD" && announcesBody(headers) }
    }
    const { bytes, truncated } = await readLimited(response.body, limit)
    return { status: response.statusCode, headers, body: bytes, bodyTruncated: truncated }
  } catch (error) {
    throw fail(timedOut ? "timeout" : classifyFailure(error))
  } finally {
    // A background drain keeps the deadline: a peer that stalls its body loses the connection
    // (aborting the request destroys its body).
    if (draining === undefined) clearTimeout(timer)
    else void draining.finally(() => clearTimeout(timer))
  }
}

/** SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: whether receivers and tools may reach private addresses. */
export const allowPrivateNetworks = boolean("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", false)

export class OutboundHttp extends Context.Service<OutboundHttp, {
  readonly request: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundHttpError>
}>()("app/infra/OutboundHttp") {
  /** Builds the client; its connection pools close with the scope. */
  static readonly make = (options: OutboundHttpOptions): Effect.Effect<OutboundHttp["Service"], never, Scope.Scope> =>
    Effect.gen(function*() {
      const acquire = (policy: GuardPolicy) =>
        Effect.acquireRelease(
          Effect.sync(() => makeAgent(policy, options)),
          (agent) => Effect.promise(() => agent.destroy())
        )
      const configured = yield* acquire({ allowPrivateNetworks: options.allowPrivateNetworks })
      const widened = options.allowPrivateNetworks ? configured : yield* acquire({ allowPrivateNetworks: true })

      // A plain function rather than Effect.fn: no span per request on the delivery path.
      const perform = (request: OutboundRequest): Effect.Effect<OutboundResponse, OutboundHttpError> => {
        const policy = { allowPrivateNetworks: options.allowPrivateNetworks || request.allowPrivateNetworks === true }
        const url = preflight(request, policy)
        if (url instanceof OutboundHttpError) return Effect.fail(url)
        const agent = policy.allowPrivateNetworks ? widened : configured
        // Interruption aborts the exchange through the canceler (no AbortSignal per request).
        return Effect.callback<OutboundResponse, OutboundHttpError>((resume) => {
          const controller = new AbortController()
          send(agent, url, request, controller).then(
            (response) => resume(Effect.succeed(response)),
            (error: unknown) => resume(Effect.fail(error instanceof OutboundHttpError ? error : fail("network_error")))
          )
          return Effect.sync(() => controller.abort())
        })
      }
      return OutboundHttp.of({ request: perform })
    })

  static readonly layerWith = (options: OutboundHttpOptions): Layer.Layer<OutboundHttp> =>
    Layer.effect(OutboundHttp, OutboundHttp.make(options))

  /** Guarded as SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS says (webhooks and `http.request` alike). */
  static readonly layer = Layer.effect(
    OutboundHttp,
    Effect.flatMap(allowPrivateNetworks, (allow) => OutboundHttp.make({ allowPrivateNetworks: allow }))
  )
}
