/**
 * Webhook signing (spec, "Delivery rules" 2-3; decisions.md section 6): HMAC-SHA256 keyed with
 * the whole secret string (`whsec_` included) over `<timestamp>.<raw body>`, sent as
 * `v1=<64 lowercase hex>` under both the current and the compatibility header names.
 * Deterministic: the timestamp comes in.
 */
import { createHmac, type KeyObject } from "node:crypto"

export const SECRET_PREFIX = "whsec_"
export const SECRET_PREFIX_LENGTH = 10

/** `key` is the secret string, or a secret KeyObject made from its UTF-8 bytes (cheaper to reuse). */
export const signature = (key: string | KeyObject, timestamp: number, rawBody: string): string =>
  `v1=${createHmac("sha256", typeof key === "string" ? Buffer.from(key, "utf8") : key).update(`${timestamp}.${rawBody}`, "utf8").digest("hex")}`

/** Every header of a delivery request. */
export const deliveryHeaders = (
  secret: string | KeyObject,
  eventId: string,
  timestamp: number,
  rawBody: string
): Record<string, string> => {
  const signed = signature(secret, timestamp, rawBody)
  const seconds = String(timestamp)
  return {
    "content-type": "application/json",
    "service-webhook-id": eventId,
    "service-webhook-timestamp": seconds,
    "service-webhook-signature": signed,
    "service-timestamp": seconds,
    "service-signature": signed
  }
}

export const secretPrefixOf = (secret: string): string => secret.slice(0, SECRET_PREFIX_LENGTH)
