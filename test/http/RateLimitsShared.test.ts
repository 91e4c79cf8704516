import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type ChildService, KEY, PINNED_KEY, startPeers } from "../support/Service.ts"

describe.skipIf(!postgresAvailable)("rate limits on Postgres, two processes", () => {
  let url: string
  const services: Array<ChildService> = []

  beforeAll(async () => {
    url = await createTestDatabase()
    const env = {
      SERVICE_DATABASE_URL: url,
      SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1"
    }
    // One after the other, so the second start finds the schema in place.
    services.push(...await startPeers(env))
  })

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()))
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("the project's burst is one budget across both processes", async () => {
    const [a, b] = services
    if (a === undefined || b === undefined) throw new Error("services did not start")
    // 40 requests at once, alternating processes and the project's two keys.
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).fetch("/v1/me", { key: i % 4 < 2 ? KEY : PINNED_KEY }))
    )
    const statuses = responses.map((r) => r.status)
    expect(statuses.filter((s) => s === 200)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(30)
    // Both processes answered some of the successes or refusals: the budget is not per process.
    for (const service of [a, b]) {
      const mine = responses.filter((_, i) => (i % 2 === 0 ? a : b) === service)
      expect(mine.some((r) => r.status === 429)).toBe(true)
    }
    const denied = responses.find((r) => r.status === 429)
    expect(denied?.headers.get("retry-after")).toMatch(/^[1-9]\d*$/)
    expect(denied?.headers.get("ratelimit-limit")).toBe("10")
    await Promise.all(responses.map((r) => r.arrayBuffer()))
    // Still exhausted a moment later, on either process.
    expect((await a.fetch("/v1/me")).status).toBe(429)
    expect((await b.fetch("/v1/me")).status).toBe(429)
  })
})
