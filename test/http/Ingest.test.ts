/**
 * Push ingestion (spec, "Provider push ingestion"; decisions.md section 5) through a real port,
 * in memory and on Postgres: one 404 for every bad credential, byte for byte; no API key; the
 * bodies; the 1 MiB ceiling; Slack's signature, normalization and filters; duplicates, also
 * arriving ten at once; and no log line ever holding the secret.
 */
import { Layer, Logger, References } from "effect"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { slackSignature } from "../../domain/triggers/PushBody.ts"
import { formatJsonLine, toRecord } from "../../infra/observability/Logging.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import {
  createConnection,
  createTriggerEndpoint,
  type CreatedSubscription,
  history,
  ingestPath,
  postIngest,
  slackCallback,
  subscribe
} from "../support/Triggers.ts"

const LIMITS = { SERVICE_RATE_LIMIT_REQUEST_BURST: "10000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000", SERVICE_TRIGGER_MIN_POLL_SECONDS: "10" }
const URL_OK = "https://93.184.215.14/hooks"
const FAKE_SECRET = `trgsec_${"A".repeat(43)}`

/** Bodies that are JSON but that the event log cannot keep (domain/Storable.ts). */
const unstorableBodies: ReadonlyArray<[string, string]> = [
  ["a NUL in the event id (the history keeps it)", '{"type":"event_callback","event_id":"Ev\\u0000","event_time":1700000000,"event":{"type":"ping"}}'],
  ["a lone surrogate", '{"type":"url_verification","challenge":"\\ud800"}'],
  ["nesting 70 levels deep", `${'{"a":'.repeat(70)}1${"}".repeat(70)}`]
]

/** A 404 as a comparable value: status, every header but the per-request ones, the body without its request id. */
const shapeOf = async (response: Response) => {
  const headers = [...response.headers].filter(([name]) => name !== "request-id" && name !== "date")
  const body = (await response.text()).replace(/req_[0-9a-z]{32}/g, "req_X")
  return { status: response.status, headers, body }
}

const suite = (name: string, env: () => Promise<Record<string, string>>, cleanup: () => Promise<void>) =>
  describe(name, () => {
    let service: InProcessService
    let endpointId: string
    let demo: CreatedSubscription
    let signed: CreatedSubscription
    let unsigned: CreatedSubscription

    beforeAll(async () => {
      service = await startService({ ...LIMITS, ...(await env()) })
      // Inactive: nothing here is delivered, the arrivals are recorded `no_targets`.
      endpointId = (await createTriggerEndpoint(service, URL_OK, { active: false })).endpointId
      demo = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      const withSecret = await createConnection(service, { userId: "u1", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb", signingSecret: "slack-signing" } })
      signed = await subscribe(service, { trigger: "slack.message_posted", userId: "u1", connectionId: withSecret.connectionId, webhookEndpointIds: [endpointId], filters: { channel: "C1" } })
      const withoutSecret = await createConnection(service, { userId: "u2", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb" } })
      unsigned = await subscribe(service, { trigger: "slack.message_posted", userId: "u2", connectionId: withoutSecret.connectionId, webhookEndpointIds: [endpointId] })
    })
    afterAll(async () => {
      await service.close()
      await cleanup()
    })

    it("every bad credential answers the same 404 as an unknown route, byte for byte", async () => {
      const reference = await shapeOf(await service.fetch("/v1/no-such-route", { method: "POST", key: null, json: {} }))
      expect(reference.status).toBe(404)
      const rotated = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      await service.fetch(`/v1/subscriptions/${rotated.subscriptionId}/rotate-secret`, { method: "POST" })
      const deleted = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpointId] })
      await service.fetch(`/v1/subscriptions/${deleted.subscriptionId}`, { method: "DELETE" })
      const connection = await createConnection(service, { userId: "u1", toolkit: "github", authClass: "bearer", credentials: { token: "t" } })
      const polling = await subscribe(service, {
        trigger: "github.issue_opened", userId: "u1", connectionId: connection.connectionId, webhookEndpointIds: [endpointId], filters: { owner: "o", repo: "r" }
      })
      const [, , , demoId, demoSecret] = ingestPath(demo).split("/")
      const ping = { type: "url_verification", challenge: "c" }
      const message = slackCallback("EvBad")
      const stale = String(Math.floor(Date.now() / 1000) - 600)
      const cases: Array<[string, Promise<Response>]> = [
        ["malformed subscription id", postIngest(service, `/v1/ingest/nope/${demoSecret}`, ping)],
        ["unknown subscription", postIngest(service, `/v1/ingest/trgsub_${"0".repeat(32)}/${demoSecret}`, ping)],
        ["wrong secret", postIngest(service, `/v1/ingest/${demoId}/${FAKE_SECRET}`, ping)],
        ["malformed secret", postIngest(service, `/v1/ingest/${demoId}/secret`, ping)],
        ["escaped secret", postIngest(service, `/v1/ingest/${demoId}/${encodeURIComponent(`${demoSecret}/`)}`, ping)],
        ["wrong secret, invalid body", postIngest(service, `/v1/ingest/${demoId}/${FAKE_SECRET}`, "not json")],
        ["rotated secret", postIngest(service, ingestPath(rotated), ping)],
        ["deleted subscription", postIngest(service, ingestPath(deleted), ping)],
        ["polling subscription", postIngest(service, `/v1/ingest/${polling.subscriptionId}/${FAKE_SECRET}`, ping)],
        ["missing Slack signature", postIngest(service, ingestPath(signed), message)],
        ["bad Slack signature", postIngest(service, ingestPath(signed), message, { signingSecret: "not-the-secret" })],
        ["stale Slack timestamp", postIngest(service, ingestPath(signed), message, {
          headers: { "x-slack-request-timestamp": stale, "x-slack-signature": "v0=" + "0".repeat(64) }
        })],
        ["no body", service.fetch(`/v1/ingest/${demoId}/${FAKE_SECRET}`, { method: "POST", key: null })],
        // What the event log cannot keep is judged only once the credential holds.
        ...unstorableBodies.map(([what, body]): [string, Promise<Response>] => [`wrong secret, ${what}`, postIngest(service, `/v1/ingest/${demoId}/${FAKE_SECRET}`, body)]),
        ["unsigned Slack callback holding a NUL", postIngest(service, ingestPath(signed), '{"type":"url_verification","challenge":"a\\u0000b"}')],
        ["wrong secret, not UTF-8", service.fetch(`/v1/ingest/${demoId}/${FAKE_SECRET}`, {
          method: "POST", key: null, body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), headers: { "content-type": "application/json" }
        })]
      ]
      for (const [what, response] of cases) expect(await shapeOf(await response), what).toEqual(reference)
    })

    it("a subscription whose connection has expired answers the same 404 as any bad credential", async () => {
      const reference = await shapeOf(await service.fetch("/v1/no-such-route", { method: "POST", key: null, json: {} }))
      const expiresMs = Date.now() + 1_500
      const connection = await createConnection(service, {
        userId: "u3", toolkit: "slack", authClass: "bearer", credentials: { token: "xoxb" }, expiresAt: new Date(expiresMs).toISOString()
      })
      const subscription = await subscribe(service, { trigger: "slack.message_posted", userId: "u3", connectionId: connection.connectionId, webhookEndpointIds: [endpointId] })
      const ping = { type: "url_verification", challenge: "c" }
      expect((await postIngest(service, ingestPath(subscription), ping)).status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, expiresMs - Date.now()) + 100))
      expect(await shapeOf(await postIngest(service, ingestPath(subscription), ping))).toEqual(reference)
    })

    it("refuses a body the log cannot keep with 422 once the credential holds", async () => {
      for (const [what, body] of unstorableBodies) {
        const refused = await postIngest(service, ingestPath(demo), body)
        expect(refused.status, what).toBe(422)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("invalid_input")
      }
    })

    it("needs no API key, and a bad one changes nothing", async () => {
      const ping = { type: "url_verification", challenge: "no-key" }
      expect(await (await postIngest(service, ingestPath(demo), ping)).json()).toEqual({ challenge: "no-key" })
      const withBadKey = await postIngest(service, ingestPath(demo), ping, { headers: { authorization: "Bearer nonsense_key_0000000" } })
      expect(withBadKey.status).toBe(200)
    })

    it("url_verification 200, event_callback 202; anything else, or not JSON, 422", async () => {
      const verification = await postIngest(service, ingestPath(demo), { type: "url_verification", challenge: "abc" })
      expect(verification.status).toBe(200)
      expect(await verification.json()).toEqual({ challenge: "abc" })
      const accepted = await postIngest(service, ingestPath(demo), { type: "event_callback", event_id: "EvA", event_time: 1_700_000_000, event: { type: "ping" } })
      expect(accepted.status).toBe(202)
      expect(await accepted.json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      // A NUL in the payload is JSON, and the payload is never stored (decisions.md section 5):
      // an outside audit found it refused 422, so a provider would retry it and give up.
      const withNul = await postIngest(service, ingestPath(demo), '{"type":"event_callback","event_id":"EvNul","event_time":1700000000,"event":{"type":"ping","text":"a\\u0000b"}}')
      expect(withNul.status).toBe(202)
      expect(await withNul.json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      const challenged = await postIngest(service, ingestPath(demo), '{"type":"url_verification","challenge":"a\\u0000b"}')
      expect(await challenged.json()).toEqual({ challenge: "a\u0000b" })
      for (const body of ["{nope", "[]", "null", JSON.stringify({ type: "block_actions" }), JSON.stringify({ type: "event_callback", event_id: "EvB" })]) {
        const refused = await postIngest(service, ingestPath(demo), body)
        expect(refused.status, body).toBe(422)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("invalid_input")
      }
      // Bytes that are not UTF-8 are no JSON, even where their replacement characters would be.
      const notUtf8 = Buffer.concat([Buffer.from('{"type":"url_verification","challenge":"'), Buffer.from([0xff]), Buffer.from('"}')])
      const refused = await service.fetch(ingestPath(demo), { method: "POST", key: null, body: notUtf8, headers: { "content-type": "application/json" } })
      expect(refused.status).toBe(422)
    })

    it("reads a provider's body as JSON whatever its Content-Type says: JSON is taken, anything else is 422, never 415", async () => {
      // decisions.md section 5: "Anything else, or a body that is not JSON, is 422" (a provider
      // other than Slack may label its JSON text/plain, or send no type at all).
      for (const [type, n] of [["text/plain", 1], ["application/x-www-form-urlencoded", 2], [undefined, 3], ["application/json; charset=latin1", 4]] as const) {
        const body = JSON.stringify({ type: "event_callback", event_id: `EvType${n}`, event_time: 1_700_000_000, event: { type: "ping" } })
        // Bytes, so that fetch adds no Content-Type of its own when the test sends none.
        const answer = await service.fetch(ingestPath(demo), { method: "POST", key: null, body: Buffer.from(body), headers: type === undefined ? {} : { "content-type": type } })
        expect(answer.status, type).toBe(202)
        expect(await answer.json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      }
      const form = await service.fetch(ingestPath(demo), { method: "POST", key: null, body: "payload=%7B%7D", headers: { "content-type": "application/x-www-form-urlencoded" } })
      expect(form.status).toBe(422)
      const gzipped = await service.fetch(ingestPath(demo), { method: "POST", key: null, body: gzipSync('{"type":"url_verification","challenge":"c"}'), headers: { "content-type": "application/json", "content-encoding": "gzip" } })
      expect(gzipped.status).toBe(422)
      // A bad credential is still the same 404, whatever the body's type.
      const wrong = await service.fetch(`${ingestPath(demo)}x`, { method: "POST", key: null, body: "hello", headers: { "content-type": "text/plain" } })
      expect(wrong.status).toBe(404)
    })

    it("refuses a body over 1 MiB with 413", async () => {
      const big = JSON.stringify({ type: "event_callback", event_id: "EvBig", event_time: 1_700_000_000, event: { type: "ping", pad: "x".repeat(1024 * 1024) } })
      const response = await postIngest(service, ingestPath(demo), big)
      expect(response.status).toBe(413)
      const fits = JSON.stringify({ type: "event_callback", event_id: "EvFits", event_time: 1_700_000_000, event: { type: "ping", pad: "x".repeat(1000 * 1000) } })
      expect((await postIngest(service, ingestPath(demo), fits)).status).toBe(202)
    })

    it("Slack: the signature when the connection has a signing secret; user messages matching the filters only", async () => {
      const path = ingestPath(signed)
      const post = (body: unknown) => postIngest(service, path, body, { signingSecret: "slack-signing" })
      expect(await (await post(slackCallback("EvS1"))).json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      expect(await (await post(slackCallback("EvS2", { channel: "C2" }))).json()).toEqual({ kind: "accepted", accepted: 0, duplicates: 0 })
      expect(await (await post(slackCallback("EvS3", { subtype: "message_changed" }))).json()).toEqual({ kind: "accepted", accepted: 0, duplicates: 0 })
      expect(await (await post(slackCallback("EvS4", { bot_id: "B1" }))).json()).toEqual({ kind: "accepted", accepted: 0, duplicates: 0 })
      const rows = await history(service, `?subscriptionId=${signed.subscriptionId}`)
      expect(rows).toHaveLength(1)
      expect(rows[0]).toMatchObject({ trigger: "slack.message_posted", deliveryMode: "push", dedupStatus: "accepted" })
      // Without a signing secret on the connection, no signature is asked for.
      expect((await postIngest(service, ingestPath(unsigned), slackCallback("EvU1"))).status).toBe(202)
    })

    it("Slack: the signature is over the body's bytes as sent, a leading byte-order mark included", async () => {
      // Outside audit: the HMAC was taken over the decoded text, which has lost the mark, so a
      // body signed as sent was refused 404.
      const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(slackCallback("EvBom1")))])
      const answer = await postIngest(service, ingestPath(signed), new Uint8Array(bytes), { signingSecret: "slack-signing" })
      expect(await answer.json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      // Signed over the text without the mark, it is not what was sent.
      const timestamp = String(Math.floor(Date.now() / 1000))
      const stripped = await postIngest(service, ingestPath(signed), new Uint8Array(bytes), {
        headers: { "x-slack-request-timestamp": timestamp, "x-slack-signature": slackSignature("slack-signing", timestamp, JSON.stringify(slackCallback("EvBom2"))) }
      })
      expect(stripped.status).toBe(404)
    })

    it("a second arrival of an event id is its own row: duplicate, the first eventId, not_enqueued, no targets", async () => {
      const body = { type: "event_callback", event_id: "EvDup", event_time: 1_700_000_000, event: { type: "ping" } }
      expect(await (await postIngest(service, ingestPath(demo), body)).json()).toEqual({ kind: "accepted", accepted: 1, duplicates: 0 })
      expect(await (await postIngest(service, ingestPath(demo), body)).json()).toEqual({ kind: "accepted", accepted: 0, duplicates: 1 })
      const rows = (await history(service, `?subscriptionId=${demo.subscriptionId}`)).filter((row) => row.occurredAt === "2023-11-14T22:13:20.000Z")
      const [duplicate, first] = rows.filter((row) => row.eventId === rows[0]?.eventId)
      expect(first).toMatchObject({ dedupStatus: "accepted" })
      expect(duplicate).toMatchObject({ dedupStatus: "duplicate", deliveryStatus: "not_enqueued", deliveryTargets: [], eventId: first?.eventId })
      expect(duplicate?.arrivalId).not.toBe(first?.arrivalId)
      expect(duplicate?.requestedWebhookEndpointIds).toEqual([endpointId])
    })

    it("ten arrivals of one event at once: exactly one accepted row", async () => {
      const body = { type: "event_callback", event_id: "EvRace", event_time: 1_700_000_001, event: { type: "ping" } }
      const answers = await Promise.all(Array.from({ length: 10 }, () => postIngest(service, ingestPath(demo), body).then((r) => r.json() as Promise<{ accepted: number; duplicates: number }>)))
      expect(answers.reduce((n, a) => n + a.accepted, 0)).toBe(1)
      expect(answers.reduce((n, a) => n + a.duplicates, 0)).toBe(9)
      const rows = (await history(service, `?subscriptionId=${demo.subscriptionId}`)).filter((row) => row.occurredAt === "2023-11-14T22:13:21.000Z")
      expect(rows).toHaveLength(10)
      expect(rows.filter((row) => row.dedupStatus === "accepted")).toHaveLength(1)
      expect(new Set(rows.map((row) => row.eventId)).size).toBe(1)
    })
  })

suite("ingest (memory)", async () => ({}), async () => {})

let databaseUrl: string | undefined
describe.skipIf(!postgresAvailable)("on Postgres", () => {
  suite(
    "ingest (postgres)",
    async () => {
      databaseUrl = await createTestDatabase("ingest")
      return { SERVICE_DATABASE_URL: databaseUrl, SERVICE_SECRET_KEY: Buffer.alloc(32, 6).toString("base64") }
    },
    async () => {
      if (databaseUrl !== undefined) await dropTestDatabase(databaseUrl)
    }
  )
})

describe("ingest logs", () => {
  it("the request line and /metrics name the same route template for ingest, and neither holds the secret", async () => {
    // The lines as the service writes them (its JSON format, redaction included).
    const written: Array<string> = []
    const writer = Logger.layer([Logger.make((options) => void written.push(formatJsonLine(toRecord(options))))])
    const service = await startService(LIMITS, Layer.mergeAll(writer, Layer.succeed(References.MinimumLogLevel, "Info")))
    try {
      const endpoint = await createTriggerEndpoint(service, URL_OK, { active: false })
      const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] })
      const path = ingestPath(subscription)
      const secret = path.split("/").pop() ?? ""
      expect((await postIngest(service, path, { type: "url_verification", challenge: "c" })).status).toBe(200)
      await new Promise((resolve) => setTimeout(resolve, 100))
      const logged = written.map((line) => JSON.parse(line) as { message: string; method?: string; route?: string; status?: number })
        .filter((line) => line.message === "request" && line.method === "POST" && line.route?.startsWith("/v1/ingest/") === true)
      expect(logged.length).toBeGreaterThan(0)
      const metrics = await (await service.fetch("/metrics", { key: null })).text()
      const labels = [...metrics.matchAll(/route="(\/v1\/ingest\/[^"]*)"/g)].map((match) => match[1])
      expect(labels.length).toBeGreaterThan(0)
      expect(new Set(labels)).toEqual(new Set([logged[0]?.route]))
      expect(logged[0]?.route).toBe("/v1/ingest/:subscriptionId/:secret")
      for (const text of [...written, metrics]) {
        expect(text).not.toContain(secret)
        expect(text).not.toContain(secret.slice(7, 30))
      }
    } finally {
      await service.close()
    }
  })


  it("no log line holds the ingest secret, whatever the answer", async () => {
    const lines: Array<string> = []
    const collector = Logger.layer([Logger.make((options) => {
      lines.push(JSON.stringify({ message: options.message, annotations: options.fiber.getRef(References.CurrentLogAnnotations) }))
    })])
    const service = await startService(LIMITS, Layer.mergeAll(collector, Layer.succeed(References.MinimumLogLevel, "All")))
    try {
      const endpoint = await createTriggerEndpoint(service, URL_OK, { active: false })
      const subscription = await subscribe(service, { trigger: "demo.event", userId: "u1", webhookEndpointIds: [endpoint.endpointId] })
      const path = ingestPath(subscription)
      const secret = path.split("/").pop() ?? ""
      await postIngest(service, path, { type: "url_verification", challenge: "c" })
      await postIngest(service, path, { type: "event_callback", event_id: "Ev1", event_time: 1_700_000_000, event: { type: "ping" } })
      await postIngest(service, path, { type: "event_callback", event_id: "Ev1", event_time: 1_700_000_000, event: { type: "ping" } })
      await postIngest(service, path, "not json")
      await postIngest(service, path, "x".repeat(2 * 1024 * 1024))
      await postIngest(service, `${path.slice(0, -1)}A`, { type: "url_verification", challenge: "c" })
      await service.fetch(path, { method: "GET", key: null })
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(lines.some((line) => line.includes("[redacted]"))).toBe(true)
      expect(lines.filter((line) => line.includes(secret) || line.includes(secret.slice(7, 30)))).toEqual([])
    } finally {
      await service.close()
    }
  })
})
