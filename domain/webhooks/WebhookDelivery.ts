/**
 * One webhook delivery as an actor: events, state, `evolve`, `decide`, and the retry policy
 * (spec, "Webhook delivery" and "Limits: Webhooks"). Records hold metadata only: never the
 * payload, the secret, bodies or headers. Pure: attempt outcomes and times come in on commands.
 *
 * Status mapping (decisions left open by the spec): `pending` until the first attempt,
 * `delivering` while a retry is scheduled (attempts made, nextRetryAt set), then `succeeded` or
 * `failed`. A delivery stopped by deactivation or deletion of its endpoint is `failed` with
 * `completedAt` (DeliveryAbandoned).
 */
import { Schema } from "effect"
import { streamCodec } from "../EventCodec.ts"
import { isoTime } from "../Time.ts"

export const DELIVERY_STREAM_TYPE = "webhook-delivery"
export const deliveryStreamId = (deliveryId: string): string => `${DELIVERY_STREAM_TYPE}-${deliveryId}`
export const MAX_ATTEMPTS = 5

/** Where the delivered event came from in the log; the envelope is rebuilt from it. */
export const SourceRef = Schema.Struct({
  streamId: Schema.String,
  version: Schema.Number,
  /** The source event's feed position, `tx:seq` zero-padded so text order is feed order. */
  position: Schema.String
})
export type SourceRef = typeof SourceRef.Type

const StatusOutcome = { statusCode: Schema.Number }
const ErrorOutcome = { error: Schema.String }
export const AttemptOutcome = Schema.Union([Schema.Struct(StatusOutcome), Schema.Struct(ErrorOutcome)])
export type AttemptOutcome = typeof AttemptOutcome.Type
const AttemptTime = { attemptedAt: Schema.String }
export const Attempt = Schema.Union([Schema.Struct({ ...AttemptTime, ...StatusOutcome }), Schema.Struct({ ...AttemptTime, ...ErrorOutcome })])
export type Attempt = typeof Attempt.Type

export const DeliveryQueued = Schema.Struct({
  type: Schema.Literal("DeliveryQueued"),
  deliveryId: Schema.String,
  endpointId: Schema.String,
  projectId: Schema.String,
  eventId: Schema.String,
  eventType: Schema.String,
  source: SourceRef,
  queuedAt: Schema.String
})
export type DeliveryQueued = typeof DeliveryQueued.Type
/**
 * Attempt events also carry the delivery's whole attempt history after them (at most five
 * entries), so that the view is written with one same-shaped update per event: the Postgres view
 * store then applies a commit's worth of attempts from many deliveries as one statement.
 */
export const DeliveryAttemptSucceeded = Schema.Struct({
  type: Schema.Literal("DeliveryAttemptSucceeded"),
  attemptedAt: Schema.String,
  /** When the attempt ended, as a give-up's time is; events recorded before it was kept lack it. */
  completedAt: Schema.optionalKey(Schema.String),
  statusCode: Schema.Number,
  attempts: Schema.Array(Attempt)
})
export type DeliveryAttemptSucceeded = typeof DeliveryAttemptSucceeded.Type
const attemptFailed = {
  type: Schema.Literal("DeliveryAttemptFailed"),
  attemptedAt: Schema.String,
  nextRetryAt: Schema.optionalKey(Schema.String),
  attempts: Schema.Array(Attempt)
}
/** A failed attempt carries its outcome: the status code it got, or the error it met. */
export const DeliveryAttemptFailed = Schema.Union([
  Schema.Struct({ ...attemptFailed, ...StatusOutcome }),
  Schema.Struct({ ...attemptFailed, ...ErrorOutcome })
])
export type DeliveryAttemptFailed = typeof DeliveryAttemptFailed.Type
export const DeliveryGivenUp = Schema.Struct({ type: Schema.Literal("DeliveryGivenUp"), at: Schema.String })
export type DeliveryGivenUp = typeof DeliveryGivenUp.Type
export const DeliveryAbandoned = Schema.Struct({
  type: Schema.Literal("DeliveryAbandoned"),
  at: Schema.String,
  // `payload_unavailable`: a trigger event's payload, kept only in the process that took it, is gone.
  reason: Schema.Literals(["endpoint_inactive", "endpoint_deleted", "source_unavailable", "payload_unavailable"])
})
export type DeliveryAbandoned = typeof DeliveryAbandoned.Type

export const DeliveryEvent = Schema.Union([
  DeliveryQueued,
  DeliveryAttemptSucceeded,
  DeliveryAttemptFailed,
  DeliveryGivenUp,
  DeliveryAbandoned
])
export type DeliveryEvent = typeof DeliveryEvent.Type

/** How delivery events enter the log and come back out of it (EventCodec.ts). */
export const deliveryCodec = streamCodec(DELIVERY_STREAM_TYPE, DeliveryEvent)

export const DeliveryStatus = Schema.Literals(["pending", "delivering", "succeeded", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

/** What attempts change; the queued facts never do. */
export interface Progress {
  readonly status: DeliveryStatus
  readonly attempts: ReadonlyArray<Attempt>
  readonly nextRetryAt?: string | undefined
  readonly completedAt?: string | undefined
}

export interface Delivery extends Progress {
  readonly queued: DeliveryQueued
}

export type DeliveryState = Delivery | undefined

export const isFinished = (status: DeliveryStatus): boolean => status === "succeeded" || status === "failed"

const outcomeOf = (event: AttemptOutcome): AttemptOutcome =>
  "statusCode" in event ? { statusCode: event.statusCode } : { error: event.error }

/** Applies an event after DeliveryQueued to a delivery's progress. */
export const advance = <P extends Progress>(state: P, event: Exclude<DeliveryEvent, DeliveryQueued>): P => {
  switch (event.type) {
    case "DeliveryAttemptSucceeded":
      return {
        ...state,
        status: "succeeded",
        attempts: [...state.attempts, { attemptedAt: event.attemptedAt, statusCode: event.statusCode }],
        nextRetryAt: undefined,
        completedAt: event.completedAt ?? event.attemptedAt
      }
    case "DeliveryAttemptFailed":
      return {
        ...state,
        status: "delivering",
        attempts: [...state.attempts, { attemptedAt: event.attemptedAt, ...outcomeOf(event) }],
        nextRetryAt: event.nextRetryAt
      }
    case "DeliveryGivenUp":
    case "DeliveryAbandoned":
      return { ...state, status: "failed", nextRetryAt: undefined, completedAt: event.at }
  }
}

export const evolve = (state: DeliveryState, event: DeliveryEvent): DeliveryState => {
  if (event.type === "DeliveryQueued") return { queued: event, status: "pending", attempts: [] }
  return state === undefined ? state : advance(state, event)
}

export const fold = (events: ReadonlyArray<DeliveryEvent>): DeliveryState => events.reduce(evolve, undefined as DeliveryState)

/**
 * The retry schedule: attempt n waits `delays[n - 1]` ms, counted from the end of the previous
 * attempt (attempt 1 from the moment it was queued). Undefined once `MAX_ATTEMPTS` are made.
 */
export const nextAttemptDelay = (delays: ReadonlyArray<number>, attemptsMade: number): number | undefined =>
  attemptsMade >= MAX_ATTEMPTS ? undefined : delays[attemptsMade] ?? delays[delays.length - 1] ?? 0

export const isSuccess = (outcome: AttemptOutcome): boolean =>
  "statusCode" in outcome && outcome.statusCode >= 200 && outcome.statusCode < 300

export type DeliveryCommand =
  | {
    readonly type: "RecordAttempt"
    readonly outcome: AttemptOutcome
    /** When the attempt ended (epoch ms): the retry delay counts from here. */
    readonly endedAt: number
    readonly startedAt: number
    readonly delays: ReadonlyArray<number>
  }
  | { readonly type: "Abandon"; readonly at: number; readonly reason: DeliveryAbandoned["reason"] }

/** Events for a command; none when the delivery is absent or already finished. */
export const decide = (command: DeliveryCommand, state: Progress | undefined): ReadonlyArray<Exclude<DeliveryEvent, DeliveryQueued>> => {
  if (state === undefined || isFinished(state.status)) return []
  if (command.type === "Abandon") return [{ type: "DeliveryAbandoned", at: isoTime(command.at), reason: command.reason }]
  const attemptedAt = isoTime(command.startedAt)
  const { outcome } = command
  const attempts = [...state.attempts, { attemptedAt, ...outcomeOf(outcome) }]
  if (isSuccess(outcome) && "statusCode" in outcome) {
    return [{ type: "DeliveryAttemptSucceeded", attemptedAt, completedAt: isoTime(command.endedAt), statusCode: outcome.statusCode, attempts }]
  }
  const delay = nextAttemptDelay(command.delays, state.attempts.length + 1)
  if (delay === undefined) {
    return [{ type: "DeliveryAttemptFailed", attemptedAt, ...outcome, attempts }, { type: "DeliveryGivenUp", at: isoTime(command.endedAt) }]
  }
  return [{ type: "DeliveryAttemptFailed", attemptedAt, ...outcome, nextRetryAt: isoTime(command.endedAt + delay), attempts }]
}

/** The public delivery record (spec, "Webhook delivery record"). */
export interface DeliveryRecord {
  readonly deliveryId: string
  readonly eventId: string
  readonly eventType: string
  readonly endpointId: string
  readonly status: DeliveryStatus
  readonly attempts: ReadonlyArray<Attempt>
  readonly nextRetryAt?: string
  readonly completedAt?: string
}

/** Zero-padded `tx:seq`, so that comparing texts compares feed positions. */
export const positionKey = (tx: bigint, seq: bigint): string => `${tx.toString().padStart(20, "0")}:${seq.toString().padStart(20, "0")}`
