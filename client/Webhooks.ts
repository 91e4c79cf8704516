/**
 * Receiver-side verification of the service's webhooks, for customers and for our own tests.
 * Verify against the exact raw body (before any JSON parsing), in constant time, and refuse
 * timestamps more than five minutes away from now. Both header pairs are accepted:
 * `Service-Webhook-Timestamp`/`Service-Webhook-Signature` and `Service-Timestamp`/`Service-Signature`.
 *
 * `node:crypto` is loaded when a delivery is first verified (`process.getBuiltinModule`), not
 * imported: the client's entry exports this function, and a static `node:crypto` import would
 * break browser bundles of the client (the dashboard's) that never verify anything. Receivers run
 * on a server runtime (Node, Deno, Bun), where the module is there and the call stays synchronous.
 */
import type * as NodeCrypto from "node:crypto"

export const TOLERANCE_SECONDS = 5 * 60

export type HeaderSource =
  | Headers
  | Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

export type VerifyResult =
  | { readonly ok: true; readonly eventId: string | undefined; readonly timestamp: number }
  | { readonly ok: false; readonly reason: "missing_headers" | "bad_timestamp" | "timestamp_out_of_tolerance" | "bad_signature" | "id_mismatch" }

const header = (headers: HeaderSource, name: string): string | undefined => {
  if (headers instanceof Headers) return headers.get(name) ?? undefined
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue
    return typeof value === "string" ? value : value?.[0]
  }
  return undefined
}

let cryptoModule: typeof NodeCrypto | undefined

const nodeCrypto = (): typeof NodeCrypto => {
  cryptoModule ??= typeof process === "undefined" ? undefined : process.getBuiltinModule?.("node:crypto")
  if (cryptoModule === undefined) {
    throw new Error("verifyWebhook needs node:crypto: verify deliveries on the server (Node, Deno or Bun), never in a browser.")
  }
  return cryptoModule
}

const utf8 = new TextEncoder()

const fromHex = (hex: string): Uint8Array => {
  const bytes = new Uint8Array(hex.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  return bytes
}

/** The envelope's `id`, read from the verified body; undefined when the body is no envelope. */
const signedId = (rawBody: string | Uint8Array): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody))
    const id = typeof parsed === "object" && parsed !== null ? (parsed as { id?: unknown }).id : undefined
    return typeof id === "string" ? id : undefined
  } catch {
    return undefined
  }
}

/**
 * Checks a delivery. `rawBody` is the request body exactly as received (string or bytes);
 * `nowSeconds` defaults to the current time.
 */
export const verifyWebhook = (
  secret: string,
  headers: HeaderSource,
  rawBody: string | Uint8Array,
  options: { readonly nowSeconds?: number; readonly toleranceSeconds?: number } = {}
): VerifyResult => {
  const timestampText = header(headers, "service-webhook-timestamp") ?? header(headers, "service-timestamp")
  const signed = header(headers, "service-webhook-signature") ?? header(headers, "service-signature")
  if (timestampText === undefined || signed === undefined) return { ok: false, reason: "missing_headers" }
  if (!/^\d{1,12}$/.test(timestampText)) return { ok: false, reason: "bad_timestamp" }
  const timestamp = Number(timestampText)
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? TOLERANCE_SECONDS)) {
    return { ok: false, reason: "timestamp_out_of_tolerance" }
  }
  const { createHmac, timingSafeEqual } = nodeCrypto()
  const expected = createHmac("sha256", utf8.encode(secret))
    .update(utf8.encode(`${timestampText}.`))
    .update(typeof rawBody === "string" ? utf8.encode(rawBody) : rawBody)
    .digest()
  // A header may carry several space-separated signatures (e.g. during a future key change).
  for (const candidate of signed.split(" ")) {
    const match = /^v1=([0-9a-f]{64})$/.exec(candidate)
    if (match?.[1] !== undefined && timingSafeEqual(fromHex(match[1]), expected)) {
      // The id to deduplicate on is the signed envelope's: the Service-Webhook-Id header is not
      // signed, so one that says otherwise is refused (a replay with the id changed).
      const eventId = signedId(rawBody)
      const stated = header(headers, "service-webhook-id")
      if (stated !== undefined && eventId !== undefined && stated !== eventId) return { ok: false, reason: "id_mismatch" }
      return { ok: true, eventId, timestamp }
    }
  }
  return { ok: false, reason: "bad_signature" }
}
