/**
 * Classification of IP addresses for the outbound address guard. Pure and synchronous: parsing
 * is delegated to `node:net` validation plus a small expansion into numbers, and the ranges are
 * the IANA special-purpose registries (RFC 6890 and successors) plus the cloud metadata
 * addresses. IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4) are judged by the
 * embedded address, so `::ffff:127.0.0.1` is loopback like `127.0.0.1`.
 */
import { isIPv4, isIPv6 } from "node:net"

export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link_local"
  | "cgnat"
  | "multicast"
  | "unspecified"
  | "broadcast"
  | "metadata"
  | "documentation"
  | "benchmarking"
  | "reserved"
  | "invalid"

/** Parses a dotted-quad IPv4 address into an unsigned 32-bit number. */
export const parseIPv4 = (text: string): number | undefined => {
  if (!isIPv4(text)) return undefined
  return text.split(".").reduce((acc, octet) => acc * 256 + Number(octet), 0)
}

const groups = (part: string): Array<number> => (part === "" ? [] : part.split(":").map((h) => parseInt(h, 16)))

/** Parses an IPv6 address (zone id ignored, trailing dotted quad allowed) into 8 hextets. */
export const parseIPv6 = (input: string): ReadonlyArray<number> | undefined => {
  const zone = input.indexOf("%")
  let text = zone >= 0 ? input.slice(0, zone) : input
  if (!isIPv6(text)) return undefined
  const lastColon = text.lastIndexOf(":")
  const last = text.slice(lastColon + 1)
  if (last.includes(".")) {
    const v4 = parseIPv4(last)
    if (v4 === undefined) return undefined
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`
  }
  const halves = text.split("::")
  const head = groups(halves[0] ?? "")
  if (halves.length === 1) return head.length === 8 ? head : undefined
  const tail = groups(halves[1] ?? "")
  const fill = 8 - head.length - tail.length
  if (fill < 1) return undefined
  return [...head, ...Array.from({ length: fill }, () => 0), ...tail]
}

type V4Range = readonly [base: string, prefix: number, kind: AddressClass]

// Most specific first: the first match wins.
const V4_RANGES: ReadonlyArray<V4Range> = [
  ["169.254.169.254", 32, "metadata"], // AWS, GCP, Azure, OpenStack instance metadata
  ["168.63.129.16", 32, "metadata"], // Azure wire server
  ["100.100.100.200", 32, "metadata"], // Alibaba Cloud metadata
  ["192.0.0.192", 32, "metadata"], // Oracle Cloud metadata
  ["255.255.255.255", 32, "broadcast"],
  ["0.0.0.0", 32, "unspecified"],
  ["0.0.0.0", 8, "reserved"], // "this network"
  ["10.0.0.0", 8, "private"],
  ["100.64.0.0", 10, "cgnat"],
  ["127.0.0.0", 8, "loopback"],
  ["169.254.0.0", 16, "link_local"],
  ["172.16.0.0", 12, "private"],
  ["192.0.0.0", 24, "reserved"], // IETF protocol assignments
  ["192.0.2.0", 24, "documentation"],
  ["192.88.99.0", 24, "reserved"], // deprecated 6to4 relay anycast
  ["192.168.0.0", 16, "private"],
  ["198.18.0.0", 15, "benchmarking"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["224.0.0.0", 4, "multicast"],
  ["240.0.0.0", 4, "reserved"]
]

const V4_TABLE = V4_RANGES.map(([base, prefix, kind]) => {
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0
  return { network: ((parseIPv4(base) ?? 0) & mask) >>> 0, mask, kind }
})

export const classifyIPv4Number = (value: number): AddressClass => {
  for (const range of V4_TABLE) {
    if (((value & range.mask) >>> 0) === range.network) return range.kind
  }
  return "public"
}

type V6Range = readonly [prefix: ReadonlyArray<number>, bits: number, kind: AddressClass]

// Checked after the embedded-IPv4 forms; the first match wins.
const V6_RANGES: ReadonlyArray<V6Range> = [
  [[0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254], 128, "metadata"], // AWS instance metadata over IPv6
  [[0, 0, 0, 0, 0, 0, 0, 0], 128, "unspecified"],
  [[0, 0, 0, 0, 0, 0, 0, 1], 128, "loopback"],
  [[0x0064, 0xff9b, 0x0001], 48, "private"], // local-use NAT64 (RFC 8215)
  [[0x0100, 0, 0, 0], 64, "reserved"], // discard-only
  [[0x2001, 0x0db8], 32, "documentation"],
  [[0x2001, 0], 23, "reserved"], // IETF protocol assignments, Teredo included
  [[0x3fff, 0], 20, "documentation"],
  [[0x5f00], 16, "reserved"], // SRv6 SIDs
  [[0xfc00], 7, "private"], // unique local
  [[0xfe80], 10, "link_local"],
  [[0xfec0], 10, "reserved"], // deprecated site-local
  [[0xff00], 8, "multicast"]
]

const matchesPrefix = (address: ReadonlyArray<number>, prefix: ReadonlyArray<number>, bits: number): boolean => {
  for (let i = 0; i < 8 && bits > 0; i++) {
    const take = Math.min(16, bits)
    const mask = (0xffff << (16 - take)) & 0xffff
    if (((address[i] ?? 0) & mask) !== ((prefix[i] ?? 0) & mask)) return false
    bits -= take
  }
  return true
}

const embeddedV4 = (high: number, low: number): number => ((high << 16) >>> 0) + low

export const classifyIPv6Hextets = (h: ReadonlyArray<number>): AddressClass => {
  const at = (i: number) => h[i] ?? 0
  const zeros = (from: number, to: number) => h.slice(from, to).every((x) => x === 0)
  // IPv4-mapped ::ffff:a.b.c.d reaches the IPv4 host; the deprecated IPv4-compatible
  // ::a.b.c.d has no legitimate use left.
  if (zeros(0, 5) && at(5) === 0xffff) return classifyIPv4Number(embeddedV4(at(6), at(7)))
  if (zeros(0, 6) && (at(6) !== 0 || at(7) > 1)) return "reserved"
  // NAT64 well-known prefix 64:ff9b::/96: a gateway forwards to the embedded IPv4 address.
  if (at(0) === 0x64 && at(1) === 0xff9b && zeros(2, 6)) return classifyIPv4Number(embeddedV4(at(6), at(7)))
  // 6to4 2002:AABB:CCDD::/48 tunnels to the IPv4 address AA.BB.CC.DD.
  if (at(0) === 0x2002) return classifyIPv4Number(embeddedV4(at(1), at(2)))
  for (const [prefix, bits, kind] of V6_RANGES) {
    if (matchesPrefix(h, prefix, bits)) return kind
  }
  // Only 2000::/3 is allocated as global unicast; everything else is reserved.
  return (at(0) & 0xe000) === 0x2000 ? "public" : "reserved"
}

/** Classifies an IPv4 or IPv6 literal (IPv6 without brackets); `invalid` when it is neither. */
export const classifyAddress = (address: string): AddressClass => {
  const v4 = parseIPv4(address)
  if (v4 !== undefined) return classifyIPv4Number(v4)
  const v6 = parseIPv6(address)
  return v6 === undefined ? "invalid" : classifyIPv6Hextets(v6)
}

export const isPublicAddress = (address: string): boolean => classifyAddress(address) === "public"

/** The IP literal in a URL hostname (`[::1]` → `::1`), or undefined for a name. */
export const ipLiteral = (hostname: string): string | undefined => {
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname
  return isIPv4(bare) || isIPv6(bare) ? bare : undefined
}
