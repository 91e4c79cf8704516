/**
 * Name resolution never takes a thread of libuv's pool (issue "Hardening", finding 8): names that
 * never resolve are cancelled at their deadline, and meanwhile the pool (file reads, `dns.lookup`)
 * stays free.
 */
import { createSocket } from "node:dgram"
import { promises as fs } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeResolver } from "../../../infra/outbound/AddressGuard.ts"

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
})
