/**
 * An id in a path or a query that no id can be (a NUL, bytes that are not UTF-8, characters
 * outside every id's alphabet) names nothing: the answer is the same 404 as for any missing id
 * (interface.md, Errors: "404 for missing, cross-project, expired or malformed IDs"), or the
 * 422 a malformed query value gets, never a 500. Postgres refuses a NUL in a text parameter, so
 * such an id used to reach the store and come back as a retryable 500 (outside audit).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type InProcessService, PINNED_KEY, startServiceOn } from "../support/Service.ts"

const BAD_IDS = [
  ["a NUL", "%00"],
  ["a NUL after a valid prefix", "exe_%00"],
  ["bytes that are not UTF-8", "whe_%ED%A0%80"],
  ["a lone byte 0xFF", "conn_%FF"],
  ["an accented letter", "trgsub_%C3%A9"]
] as const

/** Every route that takes an id in its path, with the body it needs past the id. */
const ROUTES: ReadonlyArray<readonly [method: string, path: (id: string) => string, json?: unknown]> = [
  ["GET", (id) => `/v1/executions/${id}`],
  ["POST", (id) => `/v1/executions/${id}/cancel`],
  ["GET", (id) => `/v1/files/${id}`],
  ["GET", (id) => `/v1/webhooks/${id}`],
  ["PATCH", (id) => `/v1/webhooks/${id}`, { active: false }],
  ["DELETE", (id) => `/v1/webhooks/${id}`],
  ["POST", (id) => `/v1/webhooks/${id}/rotate-secret`],
  ["GET", (id) => `/v1/webhooks/${id}/deliveries`],
  ["POST", (id) => `/v1/webhooks/${id}/recover`, { since: "2026-01-01T00:00:00Z" }],
  ["POST", (id) => `/v1/webhooks/${id}/deliveries/whd_00000000000000000000000000000000/resend`],
  ["GET", (id) => `/v1/subscriptions/${id}`],
  ["DELETE", (id) => `/v1/subscriptions/${id}`],
  ["POST", (id) => `/v1/subscriptions/${id}/rotate-secret`],
  ["GET", (id) => `/v1/connections/${id}`],
  ["DELETE", (id) => `/v1/connections/${id}`]
]

describe.each(["memory", "postgres"] as const)("ids no id can be (%s)", (mode) => {
  let service: InProcessService
  beforeAll(async () => {
    service = await startServiceOn(mode, "path_ids", { SERVICE_RATE_LIMIT_REQUEST_BURST: "100000" })
  }, 60_000)
  afterAll(() => service?.close())

  describe.each(BAD_IDS)("an id with %s", (_, id) => {
    it.each(ROUTES.map(([method, path, json]) => [`${method} ${path(":id")}`, method, path(id), json] as const))(
      "%s is 404 not_found",
      async (_name, method, path, json) => {
        const response = await service.fetch(path, { method, ...(json === undefined ? {} : { json }) })
        const body = (await response.json()) as { error: { code: string; retryable: boolean } }
        expect({ status: response.status, code: body.error.code, retryable: body.error.retryable })
          .toEqual({ status: 404, code: "not_found", retryable: false })
      }
    )

    it("a second id in the resend path is 404 too", async () => {
      const created = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/hook", events: ["execution.succeeded"] } })
      expect(created.status).toBe(201)
      const { endpointId } = (await created.json()) as { endpointId: string }
      const response = await service.fetch(`/v1/webhooks/${endpointId}/deliveries/${id}/resend`, { method: "POST" })
      expect(response.status).toBe(404)
    })

    it("as the trigger-events subscriptionId filter it is 422 invalid_input", async () => {
      const response = await service.fetch(`/v1/trigger-events?subscriptionId=${id}`)
      const body = (await response.json()) as { error: { code: string } }
      expect({ status: response.status, code: body.error.code }).toEqual({ status: 422, code: "invalid_input" })
    })

    it("as an ingest subscription id it is the ingest 404", async () => {
      const response = await service.fetch(`/v1/ingest/${id}/trgsec_x`, { method: "POST", key: null, json: { type: "url_verification", challenge: "c" } })
      expect(response.status).toBe(404)
    })
  })

  // The router has a length limit of its own for a path parameter (100 by default): an id past it
  // was refused before the key was counted and before a pinned key's 403 (fuzz audit).
  describe("an id longer than any id", () => {
    const long = `whe_${"a".repeat(200)}`

    it.each(ROUTES.map(([method, path, json]) => [`${method} ${path(":id")}`, method, path(long), json] as const))(
      "%s is 404 not_found after the key's token, with its RateLimit headers",
      async (_name, method, path, json) => {
        const response = await service.fetch(path, { method, ...(json === undefined ? {} : { json }) })
        const body = (await response.json()) as { error: { code: string } }
        expect({ status: response.status, code: body.error.code, limit: response.headers.get("ratelimit-remaining") !== null })
          .toEqual({ status: 404, code: "not_found", limit: true })
      }
    )

    it("a pinned key on a webhook route is 403 before the id is judged, as for a short unknown id", async () => {
      for (const id of ["whe_short", long]) {
        const response = await service.fetch(`/v1/webhooks/${id}`, { key: PINNED_KEY })
        const body = (await response.json()) as { error: { code: string } }
        expect([id.length, response.status, body.error.code]).toEqual([id.length, 403, "auth_insufficient_scope"])
      }
    })
  })

  it.each([
    ["tool", "demo.echo%00"],
    ["cursor", "%00"],
    ["status", "%00"]
  ])("the executions list's %s holding a NUL is 422 invalid_input", async (name, value) => {
    const response = await service.fetch(`/v1/executions?${name}=${value}`)
    const body = (await response.json()) as { error: { code: string } }
    expect({ status: response.status, code: body.error.code }).toEqual({ status: 422, code: "invalid_input" })
  })
})
