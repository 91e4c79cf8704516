import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type AddressClass, classifyAddress, ipLiteral, parseIPv6 } from "../../../infra/outbound/IpAddress.ts"

const V4: ReadonlyArray<readonly [string, AddressClass]> = [
  ["8.8.8.8", "public"],
  ["1.1.1.1", "public"],
  ["93.184.216.34", "public"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.0.0.1", "private"],
  ["10.255.255.255", "private"],
  ["9.255.255.255", "public"],
  ["11.0.0.0", "public"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.15.255.255", "public"],
  ["172.32.0.0", "public"],
  ["192.168.1.1", "private"],
  ["192.169.0.1", "public"],
  ["169.254.1.1", "link_local"],
  ["169.254.169.254", "metadata"],
  ["168.63.129.16", "metadata"],
  ["100.100.100.200", "metadata"],
  ["192.0.0.192", "metadata"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["100.63.255.255", "public"],
  ["100.128.0.0", "public"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.255", "multicast"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "reserved"],
  ["255.255.255.255", "broadcast"],
  ["240.0.0.1", "reserved"],
  ["192.0.2.1", "documentation"],
  ["198.51.100.7", "documentation"],
  ["203.0.113.9", "documentation"],
  ["198.18.0.1", "benchmarking"],
  ["198.19.255.255", "benchmarking"],
  ["198.20.0.0", "public"],
  ["192.0.0.8", "reserved"],
  ["192.88.99.1", "reserved"]
]

const V6: ReadonlyArray<readonly [string, AddressClass]> = [
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["0:0:0:0:0:0:0:1", "loopback"],
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::FFFF:7F00:0001", "loopback"],
  ["::ffff:10.1.2.3", "private"],
  ["::ffff:8.8.8.8", "public"],
  ["::ffff:169.254.169.254", "metadata"],
  ["::127.0.0.1", "reserved"],
  ["64:ff9b::7f00:1", "loopback"],
  ["64:ff9b::8.8.8.8", "public"],
  ["64:ff9b::192.168.0.1", "private"],
  ["64:ff9b:1::1", "private"],
  ["2002:7f00:1::1", "loopback"],
  ["2002:a9fe:a9fe::1", "metadata"],
  ["2002:808:808::1", "public"],
  ["fc00::1", "private"],
  ["fd12:3456::1", "private"],
  ["fd00:ec2::254", "metadata"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["febf:ffff::1", "link_local"],
  ["fec0::1", "reserved"],
  ["ff02::1", "multicast"],
  ["ff0e::1", "multicast"],
  ["2001:db8::1", "documentation"],
  ["3fff::1", "documentation"],
  ["2001::1", "reserved"],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved"],
  ["100::1", "reserved"],
  ["5f00::1", "reserved"],
  ["4000::1", "reserved"],
  ["2606:4700:4700::1111", "public"],
  ["2a00:1450:4001:81c::200e", "public"]
]

const INVALID = ["", "localhost", "1.2.3", "256.1.1.1", "01.2.3.4", "::ffff:999.1.1.1", "1:2:3:4:5:6:7:8:9", "[::1]", "gggg::1"]

describe("classifyAddress", () => {
  for (const [address, expected] of [...V4, ...V6]) {
    it(`${address} is ${expected}`, () => {
      assert.strictEqual(classifyAddress(address), expected)
    })
  }

  it("calls anything that is not an IP literal invalid", () => {
    for (const text of INVALID) assert.strictEqual(classifyAddress(text), "invalid", text)
  })

  it("judges IPv4-mapped and NAT64 addresses by the IPv4 address they embed", () => {
    fc.assert(fc.property(fc.ipV4(), (v4) => {
      const kind = classifyAddress(v4)
      assert.strictEqual(classifyAddress(`::ffff:${v4}`), kind)
      assert.strictEqual(classifyAddress(`64:ff9b::${v4}`), kind)
    }), { numRuns: 2_000 })
  })

  it("parses compressed and full IPv6 forms to the same hextets", () => {
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), (hextets) => {
      const full = hextets.map((h) => h.toString(16)).join(":")
      const compressed = new URL(`http://[${full}]/`).hostname.slice(1, -1)
      assert.deepStrictEqual(parseIPv6(full), hextets)
      assert.deepStrictEqual(parseIPv6(compressed), hextets)
    }), { numRuns: 2_000 })
  })
})

describe("ipLiteral", () => {
  it("strips brackets from IPv6 hosts and ignores names", () => {
    assert.strictEqual(ipLiteral("[::1]"), "::1")
    assert.strictEqual(ipLiteral("127.0.0.1"), "127.0.0.1")
    assert.isUndefined(ipLiteral("example.com"))
    assert.isUndefined(ipLiteral("[example.com]"))
  })
})
