/**
 * One attempt of a delivery: its envelope, the signature under the endpoint's current secret,
 * and the POST, which never outlives the runner lease that allowed it (past the lease a peer may
 * run the same lane: docs/architecture.md, "Failure model").
 *
 * Envelopes of queued deliveries are kept in memory, serialized, so that a lane need not re-read
 * their source and fans of one event share nothing but the text. The cache is bounded in bytes
 * (one envelope may carry a 1 MiB execution output) and shared fairly between projects (when full,
 * the project holding the most loses its least recently used), and only a shortcut: a lane
 * rebuilds any envelope it has lost from the log, or, for a trigger event, from the payloads
 * this process keeps (TriggerPayloads.ts), which are shared the same way.
 */
import { Clock, Effect } from "effect"
import { createSecretKey, type KeyObject } from "node:crypto"
import * as Delivery from "../../domain/webhooks/WebhookDelivery.ts"
import { deliveryHeaders } from "../../domain/webhooks/WebhookSignature.ts"
import type { SecretsShape } from "../access/Secrets.ts"
import type { Incarnation } from "../actors/index.ts"
import { BoundedCache } from "../BoundedCache.ts"
import { recordAttempt } from "../observability/Metrics.ts"
import { type SpanOutcome, spanned } from "../observability/Tracing.ts"
import type { OutboundHttp } from "../outbound/OutboundHttp.ts"
import type { EndpointRow } from "./WebhookProjections.ts"
import { envelopeOf, type WebhookEvent } from "./WebhookSources.ts"

/** Characters of envelope text kept at most (about 64 MB of heap). */
export const ENVELOPE_CACHE_CHARS = 32 * 1024 * 1024

export interface Envelope {
  readonly eventId: string
  readonly projectId: string
  /** The request body: the envelope as JSON text, signed as sent. */
  readonly body: string
}

export const envelopeFor = (event: WebhookEvent): Envelope => ({ eventId: event.eventId, projectId: event.projectId, body: JSON.stringify(envelopeOf(event)) })

export interface AttemptResult {
  readonly startedAt: number
  readonly endedAt: number
  readonly outcome: Delivery.AttemptOutcome
}

/** What an attempt's span says of it: the receiver's status or the sanitized error, an error status unless 2xx. */
const attemptSpanOutcome = (result: AttemptResult): SpanOutcome => {
  const outcome = result.outcome
  if (!("statusCode" in outcome)) return { attributes: { "webhook.outcome": "failed", "error.type": outcome.error }, error: `the attempt failed: ${outcome.error}` }
  const status = { "http.response.status_code": outcome.statusCode }
  return Delivery.isSuccess(outcome)
    ? { attributes: { ...status, "webhook.outcome": "succeeded" } }
    : { attributes: { ...status, "webhook.outcome": "failed", "error.type": String(outcome.statusCode) }, error: `the receiver answered ${outcome.statusCode}` }
}

export const makeDeliveryAttempts = (deps: {
  readonly secrets: SecretsShape
  readonly http: OutboundHttp["Service"]
  readonly timeoutMs: number
}) => {
  const envelopes = new BoundedCache<string, Envelope>({
    maxWeight: ENVELOPE_CACHE_CHARS,
    weigh: (envelope) => envelope.body.length,
    groupOf: (envelope) => envelope.projectId
  })

  // Opening a sealed secret and preparing an HMAC key cost more than the signature itself; a
  // rotation seals a new value, so caching by sealed text never serves an old secret.
  const keys = new BoundedCache<string, KeyObject | "unavailable">({ maxWeight: 1_000 })
  const signingKey = (sealed: string): KeyObject | undefined => {
    let key = keys.get(sealed)
    if (key === undefined) {
      const secret = deps.secrets.open(sealed)
      key = secret === undefined ? "unavailable" : createSecretKey(Buffer.from(secret, "utf8"))
      keys.set(sealed, key)
    }
    return key === "unavailable" ? undefined : key
  }

  /** One attempt: a span when traces are exported, and the attempt metrics. */
  const attempt = (incarnation: Incarnation, endpoint: EndpointRow, envelope: Envelope, deliveryId: string) =>
    attemptOnce(incarnation, endpoint, envelope).pipe(
      Effect.tap((result) => Effect.sync(() => recordAttempt(Delivery.isSuccess(result.outcome), (result.endedAt - result.startedAt) / 1000))),
      spanned(
        "webhook.delivery_attempt",
        { "webhook.endpoint_id": endpoint.endpointId, "webhook.delivery_id": deliveryId, "webhook.event_id": envelope.eventId },
        "client",
        attemptSpanOutcome
      )
    )

  const attemptOnce = Effect.fnUntraced(function*(incarnation: Incarnation, endpoint: EndpointRow, envelope: Envelope) {
    const startedAt = yield* Clock.currentTimeMillis
    const secret = signingKey(endpoint.sealedSecret)
    if (secret === undefined) return { startedAt, endedAt: startedAt, outcome: { error: "secret_unavailable" } } satisfies AttemptResult
    const outcome: Delivery.AttemptOutcome = yield* deps.http.request({
      method: "POST",
      url: endpoint.url,
      headers: deliveryHeaders(secret, envelope.eventId, Math.floor(startedAt / 1000), envelope.body),
      body: envelope.body,
      timeoutMs: Math.max(1, Math.min(deps.timeoutMs, Math.floor(incarnation.safeUntil() - performance.now()))),
      maxBodyBytes: 0
    }).pipe(
      Effect.map((response): Delivery.AttemptOutcome => ({ statusCode: response.status })),
      Effect.catchTag("OutboundHttpError", (error) => Effect.succeed<Delivery.AttemptOutcome>({ error: error.reason }))
    )
    return { startedAt, endedAt: yield* Clock.currentTimeMillis, outcome } satisfies AttemptResult
  })

  return {
    attempt,
    remember: (deliveryId: string, event: WebhookEvent) => envelopes.set(deliveryId, envelopeFor(event)),
    remembered: (deliveryId: string) => envelopes.get(deliveryId),
    forget: (deliveryId: string) => envelopes.delete(deliveryId)
  }
}
