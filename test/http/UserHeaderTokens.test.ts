/**
 * A request that names a user it may not act for (a pinned key naming another user) or names
 * one badly is still an authenticated request: it takes its token from the standard bucket and
 * carries the `RateLimit-*` headers (decisions.md section 2), and once the bucket is empty it is
 * 429 like any other. The user header used to be judged before the bucket (outside audit).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, KEY, PINNED_KEY, startService } from "../support/Service.ts"

const codeOf = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code

describe("the user header and the rate limit", () => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: "3", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" })
  })
  afterAll(() => service?.close())

  it("403 and 422 for the header take a token and say so; an empty bucket is 429 before the header is judged", async () => {
    const pinnedElsewhere = await service.fetch("/v1/me", { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } })
    expect({ status: pinnedElsewhere.status, code: await codeOf(pinnedElsewhere), remaining: pinnedElsewhere.headers.get("ratelimit-remaining") })
      .toEqual({ status: 403, code: "auth_insufficient_scope", remaining: "2" })

    const malformed = await service.fetch("/v1/executions", { key: KEY, headers: { "x-service-user-id": "bad user" } })
    expect({ status: malformed.status, code: await codeOf(malformed), remaining: malformed.headers.get("ratelimit-remaining") })
      .toEqual({ status: 422, code: "invalid_input", remaining: "1" })

    expect((await service.fetch("/v1/me")).status).toBe(200)

    const emptied = await service.fetch("/v1/me", { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } })
    expect({ status: emptied.status, code: await codeOf(emptied) }).toEqual({ status: 429, code: "rate_limited" })
    expect(emptied.headers.get("retry-after")).not.toBeNull()
  })
})
