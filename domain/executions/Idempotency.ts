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
  inputHash: Schema.String,
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

/** What a request with this key and input hash does at `now`. */
export const decide = (state: IdempotencyState, inputHash: string, now: number): IdempotencyDecision => {
  if (state === undefined || now - state.claimedAtMs >= WINDOW_MS) return { _tag: "Claim" }
  return state.inputHash === inputHash ? { _tag: "Replay", executionId: state.executionId } : { _tag: "Mismatch" }
}
