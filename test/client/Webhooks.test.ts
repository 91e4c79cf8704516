import { describe, expect, it } from "vitest"
import { verifyWebhook } from "../../client/Webhooks.ts"
import { deliveryHeaders, secretPrefixOf, signature } from "../../domain/webhooks/WebhookSignature.ts"

const secret = "whsec_0123456789abcdefghijklmnopqrstuvwxyzABCDEF"
const body = JSON.stringify({ id: "evt_1", type: "execution.succeeded", createdAt: "t", projectId: "p", data: { é: "ü" } })

describe("signing and verification", () => {
  it("signs v1=<hex> of HMAC-SHA256(whole secret, `${t}.${body}`) under both header pairs", () => {
    const headers = deliveryHeaders(secret, "evt_1", 1_700_000_000, body)
    expect(headers["service-webhook-signature"]).toMatch(/^v1=[0-9a-f]{64}$/)
    expect(headers["service-signature"]).toBe(headers["service-webhook-signature"])
    expect(headers["service-timestamp"]).toBe("1700000000")
    expect(headers["service-webhook-id"]).toBe("evt_1")
    expect(headers["content-type"]).toBe("application/json")
    // A known answer: computed independently with openssl.
    expect(signature("whsec_test", 1, "{}")).toBe("v1=7500d5d4be4b3ef07af1fe56f7d522d135cdaa7530de557e67cc1049c52de094")
    expect(secretPrefixOf(secret)).toBe("whsec_0123")
  })
  it("accepts either header pair, refuses a bad signature, body or timestamp", () => {
    const headers = deliveryHeaders(secret, "evt_1", 1_700_000_000, body)
    const now = { nowSeconds: 1_700_000_100 }
    expect(verifyWebhook(secret, headers, body, now)).toEqual({ ok: true, eventId: "evt_1", timestamp: 1_700_000_000 })
    const compat = { "Service-Timestamp": headers["service-timestamp"]!, "Service-Signature": headers["service-signature"]! }
    expect(verifyWebhook(secret, compat, Buffer.from(body), now).ok).toBe(true)
    expect(verifyWebhook(secret, new Headers(headers), body, now).ok).toBe(true)
    expect(verifyWebhook(`${secret}x`, headers, body, now)).toEqual({ ok: false, reason: "bad_signature" })
    expect(verifyWebhook(secret, headers, body.replace("ü", "u"), now)).toEqual({ ok: false, reason: "bad_signature" })
    expect(verifyWebhook(secret, headers, body, { nowSeconds: 1_700_000_301 })).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" })
    expect(verifyWebhook(secret, headers, body, { nowSeconds: 1_699_999_699 })).toEqual({ ok: false, reason: "timestamp_out_of_tolerance" })
    expect(verifyWebhook(secret, {}, body, now)).toEqual({ ok: false, reason: "missing_headers" })
  })

  // Outside audit: eventId came from Service-Webhook-Id, which the signature does not cover, so a
  // replay within the tolerance could change or drop it and pass the deduplication on eventId.
  it("answers the signed body's id as eventId; a Service-Webhook-Id that differs is refused", () => {
    const headers = deliveryHeaders(secret, "evt_1", 1_700_000_000, body)
    const now = { nowSeconds: 1_700_000_100 }
    const { "service-webhook-id": _id, ...withoutId } = headers
    expect(verifyWebhook(secret, withoutId, body, now)).toEqual({ ok: true, eventId: "evt_1", timestamp: 1_700_000_000 })
    expect(verifyWebhook(secret, { ...headers, "service-webhook-id": "evt_fresh_1" }, body, now)).toEqual({ ok: false, reason: "id_mismatch" })
  })
})
