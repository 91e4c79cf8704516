/**
 * Idempotency keys of executions (decisions.md section 3): keyed by (project, user, key) for 24
 * hours. One stream per key identity holds its claims; a claim is appended atomically with the
 * `ExecutionRequested` of the execution it names, so of many concurrent requests with one key
 * exactly one creates an execution. The stream id is a digest: the key itself is never stored.
 */
import { Schema } from "effect"
import { streamCodec } from "../EventCodec.ts"

export const STREAM_TYPE = "idempotency"
export const WINDOW_MS = 24 * 60 * 60 * 1000

export const IdempotencyKeyClaimed = Schema.Struct({
  type: Schema.Literal("IdempotencyKeyClaimed"),
  executionId: Schema.String,
  /**
   * A MAC of the tool and its canonical input: who reads the log cannot test guesses of a
   * secret inside an input against it. With a database, under the database's idempotency key
   * (kept sealed under SERVICE_SECRET_KEY, so it outlives a rotation); claims made before that
   * key existed, and every claim in memory mode, under a key derived from SERVICE_SECRET_KEY.
   */
  inputMac: Schema.optionalKey(Schema.String),
  /** Claims written before `inputMac`: a plain SHA-256 of the same text. */
  inputHash: Schema.optionalKey(Schema.String),
  claimedAtMs: Schema.Number
})
export type IdempotencyKeyClaimed = typeof IdempotencyKeyClaimed.Type

/** A key's stream holds claims only: its union has one member. */
export const idempotencyCodec = streamCodec(STREAM_TYPE, IdempotencyKeyClaimed)

/** The newest claim of a key, if any. */
export type IdempotencyState = IdempotencyKeyClaimed | undefined

export const evolve = (_state: IdempotencyState, event: IdempotencyKeyClaimed): IdempotencyState => event

export type IdempotencyDecision =
  | { readonly _tag: "Claim" }
  | { readonly _tag: "Replay"; readonly executionId: string }
  | { readonly _tag: "Mismatch" }

/**
 * How a request's input compares with a claim's. `mac` is what a new claim carries; the others,
 * computed only when a claim does not match it, are what older claims carry: the MAC under
 * the current secret key and, while a rotation is under way, under the previous one (claims
 * made before the database had its idempotency key), and the plain hash (claims made before
 * input MACs).
 */
export interface InputDigest {
  readonly mac: string
  readonly currentMac: () => string
  readonly previousMac?: (() => string | undefined) | undefined
  readonly hash: () => string
}

const sameInput = (claim: IdempotencyKeyClaimed, input: InputDigest): boolean => {
  if (claim.inputMac === undefined) return claim.inputHash === input.hash()
  return claim.inputMac === input.mac || claim.inputMac === input.currentMac() ||
    (input.previousMac !== undefined && claim.inputMac === input.previousMac())
}

/** What a request with this key and input does at `now`. */
export const decide = (state: IdempotencyState, input: InputDigest, now: number): IdempotencyDecision => {
  if (state === undefined || now - state.claimedAtMs >= WINDOW_MS) return { _tag: "Claim" }
  return sameInput(state, input) ? { _tag: "Replay", executionId: state.executionId } : { _tag: "Mismatch" }
}
