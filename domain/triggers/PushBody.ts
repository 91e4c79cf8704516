/**
 * The push ingest body (decisions.md section 5): the Slack Events API shape for every push
 * trigger, its `v0` request signature, and normalization of the pushed event by its trigger.
 * Pure; the signature's clock comes in.
 *
 * `url_verification` answers its challenge; `event_callback` carries `event_id` (the dedup key),
 * `event_time` (Unix seconds: the occurrence time) and the `event` object. Anything else, or a
 * body that is not JSON, is invalid (422).
 */
import { Predicate, Schema } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { matchesMessageFilters, MessageFilters, normalizeMessageEvent } from "../catalog/Slack.ts"

const UrlVerification = Schema.Struct({ type: Schema.Literal("url_verification"), challenge: Schema.String.check(Schema.isMaxLength(1024)) })
const EventCallback = Schema.Struct({
  type: Schema.Literal("event_callback"),
  event_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)),
  // Seconds between 2001 and 2286: a provider time that is no Unix seconds is refused.
  event_time: Schema.Int.check(Schema.isBetween({ minimum: 1_000_000_000, maximum: 9_999_999_999 })),
  event: Schema.Struct({ type: Schema.String })
})
const PushBody = Schema.Union([UrlVerification, EventCallback])
const decodeBody = Schema.decodeUnknownResult(PushBody)

export type PushRequest =
  | { readonly kind: "verification"; readonly challenge: string }
  | {
    readonly kind: "callback"
    readonly eventId: string
    readonly occurredAtMs: number
    /** The `event` object as sent (every field kept, not just those checked). */
    readonly event: Schema.JsonObject
  }

const isJsonObject = (value: unknown): value is Schema.JsonObject => Predicate.isObject(value) && !Array.isArray(value)

/** The request a body makes, or undefined when the body is not one of the shapes above. */
export const parsePushBody = (text: string): PushRequest | undefined => {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    return undefined
  }
  const decoded = decodeBody(raw)
  if (decoded._tag === "Failure") return undefined
  const body = decoded.success
  if (body.type === "url_verification") return { kind: "verification", challenge: body.challenge }
  // Decoding kept only `type` of the event; its other fields are taken from the parsed JSON.
  const event = isJsonObject(raw) && isJsonObject(raw.event) ? raw.event : undefined
  if (event === undefined) return undefined
  return { kind: "callback", eventId: body.event_id, occurredAtMs: body.event_time * 1000, event }
}

/** Slack signs `v0:<timestamp>:<raw body>`; a timestamp more than five minutes away is refused. */
export const SLACK_TOLERANCE_SECONDS = 300

/** The signature of a body: over its bytes as sent (a string is taken as its UTF-8 bytes). */
export const slackSignature = (signingSecret: string, timestamp: string, rawBody: string | Uint8Array): string =>
  `v0=${createHmac("sha256", signingSecret).update(`v0:${timestamp}:`, "utf8").update(rawBody).digest("hex")}`

/** Whether the `X-Slack-Signature` and `X-Slack-Request-Timestamp` headers sign `rawBody`; constant-time. */
export const verifySlackSignature = (
  signingSecret: string,
  headers: { readonly signature: string | undefined; readonly timestamp: string | undefined },
  rawBody: string | Uint8Array,
  nowMs: number
): boolean => {
  const { signature, timestamp } = headers
  if (signature === undefined || timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return false
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > SLACK_TOLERANCE_SECONDS) return false
  const expected = Buffer.from(slackSignature(signingSecret, timestamp, rawBody))
  const given = Buffer.from(signature)
  return expected.length === given.length && timingSafeEqual(expected, given)
}

const decodeDemoFilters = Schema.decodeUnknownOption(Schema.Struct({ type: Schema.optionalKey(Schema.String) }))
const decodeMessageFilters = Schema.decodeUnknownOption(MessageFilters)

/**
 * The payload a pushed event becomes under `trigger`, or undefined when the trigger does not
 * recognize it or the subscription's filters do not match it (acknowledged, not recorded).
 * `demo.event` takes the event as it is; `slack.message_posted` user messages only.
 */
export const normalizePushed = (trigger: string, event: Schema.JsonObject, filters: unknown): Schema.JsonObject | undefined => {
  switch (trigger) {
    case "demo.event": {
      const wanted = decodeDemoFilters(filters)
      if (wanted._tag === "None") return undefined
      return wanted.value.type === undefined || wanted.value.type === event.type ? event : undefined
    }
    case "slack.message_posted": {
      const payload = normalizeMessageEvent(event)
      const wanted = decodeMessageFilters(filters)
      if (payload === undefined || wanted._tag === "None" || !matchesMessageFilters(payload, wanted.value)) return undefined
      return { ...payload }
    }
    default:
      return undefined
  }
}
