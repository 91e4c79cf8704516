/**
 * The names the machine's hosts file (`/etc/hosts`) gives addresses to, as `getaddrinfo` would
 * honour them: the guarded resolver (AddressGuard.ts) asks DNS directly, which does not read that
 * file, so without this a name an operator mapped there (a container's alias, a pinned receiver)
 * would not resolve at all, and one mapped to a private address would pass the create-time
 * check only to fail every delivery. The file is read again when it is older than `maxAgeMs`.
 */
import { promises as fs } from "node:fs"
import { ipLiteral } from "./IpAddress.ts"

export interface HostsEntry {
  readonly address: string
  readonly family: 4 | 6
}

/** The file's names (lower case) and their addresses, in the file's order. */
export const parseHosts = (text: string): ReadonlyMap<string, ReadonlyArray<HostsEntry>> => {
  const names = new Map<string, Array<HostsEntry>>()
  for (const raw of text.split("\n")) {
    const [address, ...aliases] = (raw.split("#", 1)[0] ?? "").trim().split(/\s+/)
    if (address === undefined || aliases.length === 0) continue
    // A zone (`fe80::1%eth0`) is the interface's business, not the address's.
    const bare = address.split("%", 1)[0] ?? address
    if (ipLiteral(bare) === undefined) continue
    const entry: HostsEntry = { address: bare, family: bare.includes(":") ? 6 : 4 }
    for (const alias of aliases) {
      const name = alias.toLowerCase()
      const known = names.get(name)
      if (known === undefined) names.set(name, [entry])
      else if (!known.some((e) => e.address === entry.address)) known.push(entry)
    }
  }
  return names
}

/** A reader of `path` that re-reads it at most every `maxAgeMs`; a missing file has no names. */
export const makeHostsFile = (path: string, maxAgeMs = 30_000) => {
  let cached: { readonly at: number; readonly names: Promise<ReadonlyMap<string, ReadonlyArray<HostsEntry>>> } | undefined
  return (hostname: string): Promise<ReadonlyArray<HostsEntry>> => {
    const now = Date.now()
    if (cached === undefined || now - cached.at > maxAgeMs) {
      cached = { at: now, names: fs.readFile(path, "utf8").then(parseHosts, () => new Map()) }
    }
    return cached.names.then((names) => names.get(hostname.toLowerCase().replace(/\.$/, "")) ?? [])
  }
}
