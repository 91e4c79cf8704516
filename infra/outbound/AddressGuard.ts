/**
 * The outbound address guard shared by webhook delivery and the http toolkit: a URL check for
 * create and patch time, and a `lookup` for `net.connect`/`tls.connect` that re-checks every
 * resolved address at connect time, so a name that resolved to a public address when it was
 * validated cannot later rebind to a private one.
 *
 * Policy: with `allowPrivateNetworks` false only public addresses pass and the names
 * `localhost` and `*.localhost` are refused. With it true everything passes except the cloud
 * metadata addresses, which stay refused: no receiver or provider legitimately lives there, and
 * reaching one hands out instance credentials.
 */
import { promises as dns } from "node:dns"
import type { LookupFunction } from "node:net"
import { Effect, Option } from "effect"
import { InvalidInput } from "../../domain/Errors.ts"
import { makeHostsFile } from "./HostsFile.ts"
import { type AddressClass, classifyAddress, ipLiteral } from "./IpAddress.ts"

export interface GuardPolicy {
  readonly allowPrivateNetworks: boolean
}

export const isAllowedClass = (kind: AddressClass, policy: GuardPolicy): boolean =>
  kind === "public" || (policy.allowPrivateNetworks && kind !== "metadata" && kind !== "invalid")

export const isAllowedAddress = (address: string, policy: GuardPolicy): boolean =>
  isAllowedClass(classifyAddress(address), policy)

export const isLocalhostName = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.+$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

export type BlockReason = AddressClass | "localhost"

/**
 * The check that needs no DNS: why `hostname` (a URL hostname, brackets allowed) is refused,
 * or undefined when it is an allowed IP literal or a name that still has to be resolved.
 */
export const blockedHost = (hostname: string, policy: GuardPolicy): BlockReason | undefined => {
  const literal = ipLiteral(hostname)
  if (literal !== undefined) {
    const kind = classifyAddress(literal)
    return isAllowedClass(kind, policy) ? undefined : kind
  }
  return !policy.allowPrivateNetworks && isLocalhostName(hostname) ? "localhost" : undefined
}

export interface ResolvedAddress {
  readonly address: string
  readonly family: number
}

/** Resolves a name to every address it has; replaced by a stub in tests. */
export type Resolver = (hostname: string, family: 0 | 4 | 6) => Promise<ReadonlyArray<ResolvedAddress>>

const LOOPBACK: ReadonlyArray<ResolvedAddress> = [{ address: "127.0.0.1", family: 4 }, { address: "::1", family: 6 }]

/**
 * Resolution by DNS queries (c-ares, on the event loop) rather than `dns.lookup`: lookup runs
 * `getaddrinfo` on libuv's four worker threads and cannot be cancelled, so four slow names
 * stalled every other lookup (and file system call) of the process. Each name gets a resolver of
 * its own that is cancelled when `timeoutMs` passes. `localhost` names are answered here (DNS
 * does not know them; the guard refuses them anyway unless private networks are allowed), and so
 * are the names of the hosts file (`hostsFile`, default `/etc/hosts`; HostsFile.ts), first, as
 * `getaddrinfo` reads it.
 */
export const makeResolver = (options: {
  readonly timeoutMs: number
  readonly servers?: ReadonlyArray<string> | undefined
  readonly hostsFile?: string | undefined
}): Resolver => {
  const hosts = makeHostsFile(options.hostsFile ?? "/etc/hosts")
  return async (hostname, family) => {
    if (isLocalhostName(hostname)) return LOOPBACK.filter((a) => family === 0 || a.family === family)
    const listed = (await hosts(hostname)).filter((a) => family === 0 || a.family === family)
    if (listed.length > 0) return listed
    const resolver = new dns.Resolver({ timeout: Math.max(1, Math.floor(options.timeoutMs / 2)), tries: 1 })
    if (options.servers !== undefined) resolver.setServers([...options.servers])
    const timer = setTimeout(() => resolver.cancel(), options.timeoutMs)
    try {
      const query = (kind: 4 | 6) =>
        (kind === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname)).then(
          (addresses) => addresses.map((address) => ({ address, family: kind })),
          (error: NodeJS.ErrnoException) => (error.code === "ENODATA" || error.code === "ENOTFOUND" ? [] : Promise.reject(error))
        )
      const answers = family === 0 ? (await Promise.all([query(4), query(6)])).flat() : await query(family)
      if (answers.length === 0) throw Object.assign(new Error(`No address for ${hostname}`), { code: "ENOTFOUND" })
      return answers
    } finally {
      clearTimeout(timer)
    }
  }
}

export const systemResolver: Resolver = makeResolver({ timeoutMs: 5_000 })

/** The error a guarded lookup reports; OutboundHttp maps it to the `address_blocked` reason. */
export class AddressBlockedError extends Error {
  readonly code = "ERR_ADDRESS_BLOCKED"
  readonly reason: BlockReason
  constructor(reason: BlockReason) {
    super(`Connection refused by the address guard (${reason})`)
    this.name = "AddressBlockedError"
    this.reason = reason
  }
}

const familyOf = (family: number | string | undefined): 0 | 4 | 6 =>
  family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0

const firstBlocked = (addresses: ReadonlyArray<ResolvedAddress>, policy: GuardPolicy): AddressClass | undefined => {
  for (const { address } of addresses) {
    const kind = classifyAddress(address)
    if (!isAllowedClass(kind, policy)) return kind
  }
  return undefined
}

/**
 * A `lookup` for `net.connect`: resolves, refuses the whole name if any address is refused
 * (a round-robin answer mixing public and private addresses is a rebinding tool), and answers
 * in the single or `all` form the caller asked for.
 */
export const makeGuardedLookup = (policy: GuardPolicy, resolve: Resolver = systemResolver): LookupFunction =>
  (hostname, options, callback) => {
    const early = blockedHost(hostname, policy)
    if (early !== undefined) {
      callback(new AddressBlockedError(early), "", 4)
      return
    }
    resolve(hostname, familyOf(options.family)).then(
      (addresses) => {
        const blocked = firstBlocked(addresses, policy)
        const first = addresses[0]
        if (blocked !== undefined) return callback(new AddressBlockedError(blocked), "", 4)
        if (first === undefined) {
          const error: NodeJS.ErrnoException = new Error(`No address for ${hostname}`)
          error.code = "ENOTFOUND"
          return callback(error, "", 4)
        }
        if (options.all === true) return callback(null, addresses.map(({ address, family }) => ({ address, family })))
        callback(null, first.address, first.family)
      },
      (error: NodeJS.ErrnoException) => callback(error, "", 4)
    )
  }

export interface UrlCheckOptions extends GuardPolicy {
  readonly requireHttps: boolean
  readonly resolve?: Resolver | undefined
  /** How long create-time resolution may take before the name is accepted unresolved. */
  readonly resolveTimeoutMs?: number | undefined
  /**
   * Said after a refusal that `allowPrivateNetworks` would lift (how the operator allows such
   * URLs); not after one no setting lifts (the metadata address, a public `http:` URL).
   */
  readonly privateNetworksHint?: string | undefined
}

const refuse = (message: string) => Effect.fail(new InvalidInput({ message }))

const describe: Record<BlockReason, string> = {
  public: "a public address",
  loopback: "a loopback address",
  private: "a private network address",
  link_local: "a link-local address",
  cgnat: "a shared (CGNAT) address",
  multicast: "a multicast address",
  unspecified: "the unspecified address",
  broadcast: "the broadcast address",
  metadata: "a cloud metadata address",
  documentation: "a documentation address",
  benchmarking: "a benchmarking address",
  reserved: "a reserved address",
  invalid: "an invalid address",
  localhost: "localhost"
}

/**
 * Parses and checks a URL for storage: scheme, no user info, fragment dropped (the WHATWG
 * parser already lower-cases scheme and host and drops default ports), literal addresses
 * classified, names resolved and every address classified.
 *
 * A name that does not resolve (or not within `resolveTimeoutMs`) is accepted: it reaches
 * nothing now, and the connect-time lookup re-checks whatever it resolves to later.
 */
/** Whether `text` holds a C0 control character or DEL. */
const hasControl = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}

export const validateUrl = Effect.fnUntraced(function*(raw: string, options: UrlCheckOptions): Effect.fn.Return<URL, InvalidInput> {
  // The parser would drop tabs and line breaks anywhere, and control characters at either end:
  // what it stored would not be what the client wrote. (A space it encodes, which keeps it.)
  const url = URL.canParse(raw) ? new URL(raw) : undefined
  if (url === undefined) return yield* refuse("url must be an absolute URL")
  if (hasControl(raw)) return yield* refuse("url must not contain control characters")
  if (url.port === "0") return yield* refuse("url must not use port 0")
  if (options.requireHttps ? url.protocol !== "https:" : url.protocol !== "https:" && url.protocol !== "http:") {
    return yield* refuse(options.requireHttps ? "url must use https" : "url must use http or https")
  }
  if (url.username !== "" || url.password !== "") return yield* refuse("url must not contain user info")
  if (url.hostname === "") return yield* refuse("url must name a host")
  url.hash = ""
  const hint = (reason: BlockReason) =>
    options.privateNetworksHint !== undefined && !options.allowPrivateNetworks &&
      (reason === "localhost" || isAllowedClass(reason, { allowPrivateNetworks: true }))
      ? `; ${options.privateNetworksHint}`
      : ""
  const early = blockedHost(url.hostname, options)
  if (early !== undefined) return yield* refuse(`url points to ${describe[early]}, which is not allowed${hint(early)}`)
  if (ipLiteral(url.hostname) !== undefined) return url
  const resolve = options.resolve ?? systemResolver
  const addresses = yield* Effect.tryPromise(() => resolve(url.hostname, 0)).pipe(
    Effect.timeoutOption(options.resolveTimeoutMs ?? 5_000),
    Effect.orElseSucceed(() => undefined)
  )
  const found = addresses === undefined ? [] : Option.getOrElse(addresses, () => [])
  const blocked = firstBlocked(found, options)
  if (blocked !== undefined) return yield* refuse(`url resolves to ${describe[blocked]}, which is not allowed${hint(blocked)}`)
  return url
})
