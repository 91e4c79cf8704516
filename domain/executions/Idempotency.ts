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
   * A MAC of the tool and its canonical input under a key derived from SERVICE_SECRET_KEY: who
   * reads the log cannot test guesses of a secret inside an input against it.
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
 * How a request's input compares with a claim's: its MAC, its MAC under the previous secret key
 * while a rotation is under way (a claim made before it), and (for older claims) its plain hash.
 */
export interface InputDigest {
  readonly mac: string
  readonly previousMac?: (() => string | undefined) | undefined
  readonly hash: () => string
}

/** What a request with this key and input does at `now`. */
export const decide = (state: IdempotencyState, input: InputDigest, now: number): IdempotencyDecision => {
  if (state === undefined || now - state.claimedAtMs >= WINDOW_MS) return { _tag: "Claim" }
  const same = state.inputMac !== undefined
    ? state.inputMac === input.mac || (input.previousMac !== undefined && state.inputMac === input.previousMac())
    : state.inputHash === input.hash()
  return same ? { _tag: "Replay", executionId: state.executionId } : { _tag: "Mismatch" }
}
