/**
 * Push ingestion (spec, "Provider push ingestion"; decisions.md section 5). The path's secret is
 * the credential: a missing, deleted or polling subscription, a wrong or rotated secret and a bad
 * provider signature all answer one and the same refusal (`refused`), decided before the body is
 * looked at, and the secret is compared by its SHA-256 in constant time. When the subscription's
 * connection carries a `signingSecret` credential, Slack's `v0` signature is required too.
 *
 * Then the budget: ingest reads no API key, so the project rate limits do not apply, and one
 * project posting large events fast took the event loop from every other (outside audit: 20-40
 * times slower answers). Accepted bodies draw on a bucket of bytes per project and process
 * (SERVICE_INGEST_BYTES_PER_MINUTE, SERVICE_INGEST_BURST_BYTES): a body counts its bytes (at
 * least 1 KiB) once per webhook endpoint of its subscription, since each delivery sends them;
 * past it the answer is `Throttled`, a 429 with the wait. Checked after the credential, so a bad
 * one is the same 404 whatever the budget.
 *
 * Then the body: `url_verification` answers its challenge; an `event_callback` is normalized by
 * the subscription's trigger and matched against its filters (an event it does not take is
 * acknowledged and not recorded), then admitted (Admission.ts). Anything else is invalid.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { timingSafeEqual } from "node:crypto"
import { isExpired } from "../../domain/Connection.ts"
import { unstorable, unstorableMessage, unstorableText } from "../../domain/Storable.ts"
import { normalizePushed, parsePushBody, verifySlackSignature } from "../../domain/triggers/PushBody.ts"
import { INGEST_SECRET_PATTERN, type Subscription } from "../../domain/triggers/Subscription.ts"
import { Secrets } from "../access/Secrets.ts"
import { BoundedCache } from "../BoundedCache.ts"
import { TABLE as CONNECTIONS_TABLE } from "../connections/ConnectionsProjection.ts"
import type { StoreUnavailable } from "../eventlog/EventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { type BucketState, takeWhole } from "../../domain/TokenBucket.ts"
import { Admission } from "./Admission.ts"
import { secretHash, Subscriptions } from "./Subscriptions.ts"
import { ingestBudget } from "./TriggerSettings.ts"

export interface IngestRequest {
  readonly subscriptionId: string
  readonly secret: string
  /** The body as text (UTF-8, a leading byte-order mark dropped). */
  readonly rawBody: string
  /** The body's bytes as sent, which a provider's signature covers. */
  readonly rawBytes: Uint8Array
  readonly slackSignature: string | undefined
  readonly slackTimestamp: string | undefined
}

export type IngestAnswer =
  | { readonly _tag: "Refused" }
  | { readonly _tag: "Throttled"; readonly retryAfter: number }
  | { readonly _tag: "Invalid"; readonly message: string }
  | { readonly _tag: "Challenge"; readonly challenge: string }
  | { readonly _tag: "Accepted"; readonly accepted: number; readonly duplicates: number }

export interface TriggerIngestShape {
  readonly ingest: (request: IngestRequest) => Effect.Effect<IngestAnswer, StoreUnavailable>
}

export class TriggerIngest extends Context.Service<TriggerIngest, TriggerIngestShape>()("app/infra/triggers/TriggerIngest") {}

const SUBSCRIPTION_ID = /^trgsub_[0-9a-z]{32}$/

const refused: IngestAnswer = { _tag: "Refused" }
const invalid = (message: string): IngestAnswer => ({ _tag: "Invalid", message })

const sameHash = (expected: string | undefined, secret: string): boolean => {
  const given = Buffer.from(secretHash(secret), "hex")
  // A subscription without a hash (polling) is compared against itself: same work, no match.
  const stored = expected === undefined ? undefined : Buffer.from(expected, "hex")
  const against = stored !== undefined && stored.length === given.length ? stored : given
  return timingSafeEqual(against, given) && against === stored
}

const Credentials = Schema.Record(Schema.String, Schema.String)
const decodeCredentials = Schema.decodeUnknownOption(Schema.fromJsonString(Credentials))

/** What a body counts against the budget at least: a flood of tiny bodies is bounded too. */
const MIN_BODY_COST = 1024

export const make = Effect.gen(function*() {
  const budget = yield* Effect.orDie(ingestBudget)
  const buckets = new Map<string, BucketState>()
  const subscriptions = yield* Subscriptions
  const admission = yield* Admission
  const views = yield* ViewStore
  const secrets = yield* Secrets
  // Opening sealed credentials costs more than the lookup; a new secret is a new sealed text.
  const opened = new BoundedCache<string, { readonly signingSecret?: string | undefined }>({ maxWeight: 1_000 })

  /**
   * The connection's signing secret; `false` when the connection is gone, has expired (as the
   * poller and the MCP tool list treat it) or cannot be opened.
   */
  const signingSecretOf = Effect.fnUntraced(function*(subscription: Subscription) {
    if (subscription.connectionId === undefined) return undefined
    const row = yield* views.get(CONNECTIONS_TABLE, { connectionId: subscription.connectionId })
    const sealed = row?.credentials
    if (row === undefined || row.projectId !== subscription.projectId || typeof sealed !== "string") return false as const
    const expiresAt = typeof row.expiresAt === "string" ? row.expiresAt : undefined
    if (isExpired(expiresAt, yield* Clock.currentTimeMillis)) return false as const
    let entry = opened.get(sealed)
    if (entry === undefined) {
      const text = secrets.open(sealed)
      const credentials = text === undefined ? undefined : decodeCredentials(text)
      if (credentials === undefined || credentials._tag === "None") return false as const
      entry = { signingSecret: credentials.value.signingSecret }
      opened.set(sealed, entry)
    }
    return entry.signingSecret
  })

  const authenticate = Effect.fnUntraced(function*(request: IngestRequest) {
    if (!SUBSCRIPTION_ID.test(request.subscriptionId) || !INGEST_SECRET_PATTERN.test(request.secret)) return undefined
    const subscription = yield* subscriptions.find(request.subscriptionId)
    if (subscription === undefined || subscription.deliveryMode !== "push" || subscription.status !== "active") return undefined
    if (!sameHash(subscription.secretHash, request.secret)) return undefined
    const signingSecret = yield* signingSecretOf(subscription)
    if (signingSecret === false) return undefined
    if (signingSecret !== undefined) {
      const now = yield* Clock.currentTimeMillis
      const signed = verifySlackSignature(signingSecret, { signature: request.slackSignature, timestamp: request.slackTimestamp }, request.rawBytes, now)
      if (!signed) return undefined
    }
    return subscription
  })

  /**
   * The wait in seconds when the project's budget cannot take `bytes` now; else takes them. One
   * bucket per project that ever sent a body here (a project's count, not a request's).
   */
  const overBudget = (subscription: Subscription, bytes: number, now: number): number | undefined => {
    if (budget === undefined) return undefined
    // What the body will cost: its bytes once per endpoint it goes to (each delivery signs and
    // sends them), never more than the burst, so that any body the ceiling lets in can pass.
    const cost = Math.min(budget.burst, Math.max(MIN_BODY_COST, bytes) * Math.max(1, subscription.webhookEndpointIds.length))
    const taken = takeWhole(budget, buckets.get(subscription.projectId), cost, now)
    if ("retryAfter" in taken) return taken.retryAfter
    buckets.set(subscription.projectId, taken.state)
    return undefined
  }

  const ingest = Effect.fnUntraced(function*(request: IngestRequest) {
    const subscription = yield* authenticate(request)
    if (subscription === undefined) return refused
    const wait = overBudget(subscription, request.rawBytes.length, yield* Clock.currentTimeMillis)
    if (wait !== undefined) return { _tag: "Throttled", retryAfter: wait } satisfies IngestAnswer
    // What the event log cannot keep, judged here rather than at the edge, so that a bad
    // credential is the same 404 whatever the body holds. The payload is never stored
    // (decisions.md section 5), so a NUL in it is JSON like any other character; the event id,
    // which the history keeps, must hold none.
    const unfit = unstorableText(request.rawBody, true)
    if (unfit !== undefined) return invalid(`The request body ${unstorableMessage[unfit]}.`)
    const body = parsePushBody(request.rawBody)
    if (body === undefined) {
      return invalid("The body must be a provider callback: {type: \"url_verification\", challenge} or {type: \"event_callback\", event_id, event_time, event}.")
    }
    const unfitId = body.kind === "callback" ? unstorable(body.eventId) : undefined
    if (unfitId !== undefined) return invalid(`The event_id ${unstorableMessage[unfitId]}.`)
    if (body.kind === "verification") return { _tag: "Challenge", challenge: body.challenge } satisfies IngestAnswer
    const payload = normalizePushed(subscription.trigger, body.event, subscription.filters)
    if (payload === undefined) return { _tag: "Accepted", accepted: 0, duplicates: 0 } satisfies IngestAnswer
    const result = yield* admission.admit({ subscription, dedupKey: body.eventId, occurredAtMs: body.occurredAtMs, payload }, "record")
    return { _tag: "Accepted", accepted: result === "accepted" ? 1 : 0, duplicates: result === "duplicate" ? 1 : 0 } satisfies IngestAnswer
  })

  return TriggerIngest.of({ ingest })
})

export const layer = Layer.effect(TriggerIngest, make)

/** `/v1/ingest/<subscriptionId>/<secret>` with the secret hidden: what a log line may show. */
export const redactIngestPath = (path: string): string => path.replace(/^(\/v1\/ingest\/[^/]*\/).*$/, "$1[redacted]")
