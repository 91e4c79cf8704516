import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { KEY, OTHER_KEY, PINNED_KEY, type InProcessService, startService } from "../support/Service.ts"

const LIMITS = { SERVICE_RATE_LIMIT_REQUEST_BURST: "5000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "60000" }
// Public literal address (documentation ranges are refused): create-time checks need no DNS.
const URL_OK = "https://93.184.215.14/hooks"

const expectError = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status)
  const body = (await response.json()) as { error: { code: string } }
  expect(body.error.code).toBe(code)
}

const suite = (name: string, env: () => Promise<Record<string, string>>, cleanup: () => Promise<void>) =>
  describe(name, () => {
    let service: InProcessService
    beforeAll(async () => {
      service = await startService({ ...LIMITS, ...(await env()) })
    })
    afterAll(async () => {
      await service.close()
      await cleanup()
    })

    const create = (json: unknown, key: string | null = KEY) => service.fetch("/v1/webhooks", { method: "POST", json, key })

    it("creates an endpoint with exactly the documented fields and a secret", async () => {
      const response = await create({ url: "HTTPS://93.184.215.14:443/Hook/Path#frag", events: ["execution.completed"] })
      expect(response.status).toBe(201)
      const body = (await response.json()) as Record<string, unknown>
      expect(Object.keys(body).toSorted()).toEqual(["active", "createdAt", "endpointId", "events", "secret", "secretPrefix", "updatedAt", "url"])
      expect(body.endpointId).toMatch(/^whe_[0-9a-z]{32}$/)
      expect(body.url).toBe("https://93.184.215.14/Hook/Path")
      expect(body.active).toBe(true)
      expect(body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{32,}$/)
      expect(body.secretPrefix).toBe(String(body.secret).slice(0, 10))
      // The log holds the secret sealed only.
      const runtime = service.runtime
      const stored = await runtime.runPromise(Effect.flatMap(EventStore, (store) => store.readStream(`webhook-endpoint-${String(body.endpointId)}`)))
      expect(stored).toHaveLength(1)
      expect(JSON.stringify(stored.map((event) => event.data))).not.toContain(String(body.secret).slice(6))
      const got = (await (await service.fetch(`/v1/webhooks/${String(body.endpointId)}`)).json()) as Record<string, unknown>
      expect(got.secret).toBeUndefined()
      expect(got.secretPrefix).toBe(body.secretPrefix)
      expect(got.url).toBe(body.url)
    })

    it("accepts every subscription kind and refuses unknown ones", async () => {
      const ok = await create({
        url: URL_OK,
        events: ["execution.succeeded", "execution.failed", "execution.cancelled", "voice.session.event", "voice.transcript.ready", "voice.observer.failed", "trigger.*", "trigger.github.issue_opened"],
        active: false
      })
      const okBody = (await ok.json()) as Record<string, unknown>
      expect(ok.status, JSON.stringify(okBody)).toBe(201)
      expect(okBody.active).toBe(false)
      await expectError(await create({ url: URL_OK, events: ["trigger.nope.never"] }), 422, "invalid_input")
      await expectError(await create({ url: URL_OK, events: ["execution.started"] }), 422, "invalid_input")
      await expectError(await create({ url: URL_OK, events: [] }), 422, "invalid_input")
      await expectError(await create({ url: URL_OK, events: ["trigger.*", "trigger.*"] }), 422, "invalid_input")
    })

    it("refuses bad bodies and bad URLs", async () => {
      const malformed = await service.fetch("/v1/webhooks", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } })
      await expectError(malformed, 400, "invalid_input")
      await expectError(await create({ url: URL_OK, events: ["trigger.*"], extra: 1 }), 422, "invalid_input")
      await expectError(await create({ events: ["trigger.*"] }), 422, "invalid_input")
      for (const url of ["http://93.184.215.14/x", "https://user:pw@93.184.215.14/x", "https://127.0.0.1/x", "https://localhost/x", "https://10.1.2.3/x", "https://169.254.169.254/x", "https://100.64.0.1/x", "not a url"]) {
        await expectError(await create({ url, events: ["trigger.*"] }), 422, "invalid_input")
      }
    })

    // Outside audit: a receiver on localhost or a private network was refused without a word on
    // how a developer may allow it; the metadata address, which no setting allows, says nothing more.
    it("says how private receivers are allowed when the setting would allow the URL, and not otherwise", async () => {
      const messageOf = async (url: string) => ((await (await create({ url, events: ["trigger.*"] })).json()) as { error: { message: string } }).error.message
      for (const url of ["https://localhost/x", "https://127.0.0.1/x", "https://10.1.2.3/x"]) {
        expect(await messageOf(url), url).toContain("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true")
      }
      expect(await messageOf("https://169.254.169.254/x")).not.toContain("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS")
      expect(await messageOf("http://93.184.215.14/x")).not.toContain("SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS")
    })

    it("needs a key, refuses pinned keys on every route and hides other projects", async () => {
      const created = (await (await create({ url: URL_OK, events: ["trigger.*"] })).json()) as { endpointId: string }
      const id = created.endpointId
      await expectError(await create({ url: URL_OK, events: ["trigger.*"] }, null), 401, "auth_missing")
      const pinned: Array<[string, string, unknown?]> = [
        ["POST", "/v1/webhooks", { url: URL_OK, events: ["trigger.*"] }],
        ["GET", "/v1/webhooks"],
        ["GET", `/v1/webhooks/${id}`],
        ["PATCH", `/v1/webhooks/${id}`, { active: false }],
        ["POST", `/v1/webhooks/${id}/rotate-secret`],
        ["DELETE", `/v1/webhooks/${id}`],
        ["GET", `/v1/webhooks/${id}/deliveries`]
      ]
      for (const [method, path, json] of pinned) {
        await expectError(await service.fetch(path, { method, json, key: PINNED_KEY }), 403, "auth_insufficient_scope")
        if (path !== "/v1/webhooks") {
          await expectError(await service.fetch(path, { method, json, key: OTHER_KEY }), 404, "not_found")
        }
      }
      await expectError(await service.fetch("/v1/webhooks/whe_00000000000000000000000000000000"), 404, "not_found")
      const list = (await (await service.fetch("/v1/webhooks", { key: OTHER_KEY })).json()) as { webhooks: Array<unknown> }
      expect(list.webhooks).toEqual([])
    })

    it("patches, rotates, lists with cursors and deletes", async () => {
      const created = (await (await create({ url: URL_OK, events: ["trigger.*"] })).json()) as { endpointId: string; secret: string; createdAt: string }
      const id = created.endpointId
      await expectError(await service.fetch(`/v1/webhooks/${id}`, { method: "PATCH", json: {} }), 422, "invalid_input")
      await expectError(await service.fetch(`/v1/webhooks/${id}`, { method: "PATCH", json: { url: "https://192.168.1.1/x" } }), 422, "invalid_input")
      await expectError(await service.fetch(`/v1/webhooks/${id}`, { method: "PATCH", json: { secret: "x" } }), 422, "invalid_input")
      const patched = await service.fetch(`/v1/webhooks/${id}`, { method: "PATCH", json: { active: false, events: ["execution.failed"] } })
      expect(patched.status).toBe(200)
      const patchedBody = (await patched.json()) as Record<string, unknown>
      expect(patchedBody).toMatchObject({ endpointId: id, active: false, events: ["execution.failed"], url: URL_OK })
      expect(patchedBody.secret).toBeUndefined()
      const rotated = await service.fetch(`/v1/webhooks/${id}/rotate-secret`, { method: "POST" })
      expect(rotated.status).toBe(200)
      const rotatedBody = (await rotated.json()) as Record<string, unknown>
      expect(Object.keys(rotatedBody).toSorted()).toEqual(["endpointId", "secret", "secretPrefix"])
      expect(rotatedBody.secret).not.toBe(created.secret)
      expect(rotatedBody.secretPrefix).toBe(String(rotatedBody.secret).slice(0, 10))

      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const page = await service.fetch(`/v1/webhooks?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
        expect(page.status).toBe(200)
        const body = (await page.json()) as { webhooks: Array<{ endpointId: string; secret?: string }>; nextCursor?: string }
        expect(body.webhooks.length).toBeLessThanOrEqual(2)
        for (const w of body.webhooks) {
          expect(w.secret).toBeUndefined()
          seen.push(w.endpointId)
        }
        cursor = body.nextCursor
      } while (cursor !== undefined)
      expect(seen).toContain(id)
      expect(new Set(seen).size).toBe(seen.length)
      // Newest first, as every other list (decisions.md: "Lists are newest first").
      expect(seen).toEqual(seen.toSorted().toReversed())
      await expectError(await service.fetch("/v1/webhooks?cursor=abc.def"), 422, "invalid_input")
      await expectError(await service.fetch("/v1/webhooks?limit=0"), 422, "invalid_input")
      await expectError(await service.fetch("/v1/webhooks?limit=101"), 422, "invalid_input")
      await expectError(await service.fetch("/v1/webhooks?status=active"), 422, "invalid_input")
      await expectError(await service.fetch(`/v1/webhooks/${id}`, { method: "PUT", json: { active: true } }), 405, "invalid_input")
      await expectError(await service.fetch(`/v1/webhooks/${id}/deliveries?cursor=abc.def`), 422, "invalid_input")
      const deliveries = await service.fetch(`/v1/webhooks/${id}/deliveries`)
      expect(deliveries.status).toBe(200)
      expect(await deliveries.json()).toEqual({ deliveries: [] })

      const removed = await service.fetch(`/v1/webhooks/${id}`, { method: "DELETE" })
      expect(removed.status).toBe(204)
      await expectError(await service.fetch(`/v1/webhooks/${id}`, { method: "DELETE" }), 404, "not_found")
      await expectError(await service.fetch(`/v1/webhooks/${id}`), 404, "not_found")
      await expectError(await service.fetch(`/v1/webhooks/${id}/deliveries`), 404, "not_found")
    })
  })

suite("webhook routes (memory)", async () => ({}), async () => {})

let databaseUrl: string | undefined
describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite("webhook routes (postgres)", async () => {
    databaseUrl = await createTestDatabase("wh")
    return { SERVICE_DATABASE_URL: databaseUrl, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }
  }, async () => {
    if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
  })
})
