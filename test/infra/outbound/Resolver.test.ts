/**
 * Name resolution never takes a thread of libuv's pool (issue "Hardening", finding 8): names that
 * never resolve are cancelled at their deadline, and meanwhile the pool (file reads, `dns.lookup`)
 * stays free.
 */
import { createSocket } from "node:dgram"
import { promises as fs } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeResolver, validateUrl } from "../../../infra/outbound/AddressGuard.ts"
import { parseHosts } from "../../../infra/outbound/HostsFile.ts"

describe("the guarded resolver", () => {
  // A DNS server that reads every query and never answers: the slowest resolver there is.
  const silent = createSocket("udp4")
  let port = 0
  beforeAll(async () => {
    await new Promise<void>((resolve) => silent.bind(0, "127.0.0.1", resolve))
    port = silent.address().port
  })
  afterAll(() => silent.close())

  it("answers localhost names itself, by family", async () => {
    const resolve = makeResolver({ timeoutMs: 500, servers: [`127.0.0.1:${port}`] })
    expect(await resolve("localhost", 4)).toEqual([{ address: "127.0.0.1", family: 4 }])
    expect(await resolve("api.localhost", 0)).toEqual([{ address: "127.0.0.1", family: 4 }, { address: "::1", family: 6 }])
  })

  it("gives up on a silent server at its deadline, and sixteen such names leave the thread pool free", async () => {
    const resolve = makeResolver({ timeoutMs: 1_500, servers: [`127.0.0.1:${port}`] })
    const started = Date.now()
    const slow = Array.from({ length: 16 }, (_, i) => resolve(`slow-${i}.example`, 0).then(() => "resolved", (e: NodeJS.ErrnoException) => e.code))
    // While they hang, work on libuv's pool goes on at once (dns.lookup took four pool threads each time).
    const poolStart = Date.now()
    for (let i = 0; i < 8; i++) await fs.readFile(new URL(import.meta.url))
    expect(Date.now() - poolStart).toBeLessThan(500)
    const outcomes = await Promise.all(slow)
    expect(Date.now() - started).toBeLessThan(4_000)
    for (const outcome of outcomes) expect(["ECANCELLED", "ETIMEOUT"]).toContain(outcome)
  })

  it("answers the hosts file's names first, as getaddrinfo does, so the guard judges them too", async () => {
    const file = join(await fs.mkdtemp(join(tmpdir(), "hosts-")), "hosts")
    await fs.writeFile(file, "127.0.0.1 localhost\n# a comment\n10.1.2.3  Receiver.internal receiver # trailing\n::1 six.internal\n93.184.216.34 public.internal\n")
    const resolve = makeResolver({ timeoutMs: 500, servers: [`127.0.0.1:${port}`], hostsFile: file })
    expect(await resolve("receiver.internal", 0)).toEqual([{ address: "10.1.2.3", family: 4 }])
    expect(await resolve("RECEIVER", 4)).toEqual([{ address: "10.1.2.3", family: 4 }])
    expect(await resolve("six.internal", 6)).toEqual([{ address: "::1", family: 6 }])
    const check = (url: string) => Effect.runPromise(Effect.match(validateUrl(url, { allowPrivateNetworks: false, requireHttps: true, resolve }), {
      onFailure: (error) => error.message,
      onSuccess: (checked) => checked.href
    }))
    expect(await check("https://receiver.internal/hook")).toMatch(/resolves to .*private/)
    expect(await check("https://six.internal/hook")).toMatch(/resolves to .*loopback/)
    expect(await check("https://public.internal/hook")).toBe("https://public.internal/hook")
  })

  it("parses a hosts file: comments, aliases, zones, and lines that name no address are skipped", () => {
    const names = parseHosts("# header\n\n  192.168.0.1 a b\nnot-an-ip c\nfe80::1%eth0 d\n192.168.0.2 A\n10.0.0.1\n")
    expect(names.get("a")).toEqual([{ address: "192.168.0.1", family: 4 }, { address: "192.168.0.2", family: 4 }])
    expect(names.get("b")).toEqual([{ address: "192.168.0.1", family: 4 }])
    expect(names.get("c")).toBeUndefined()
    expect(names.get("d")).toEqual([{ address: "fe80::1", family: 6 }])
    expect(names.size).toBe(3)
  })
})
