/**
 * Token-bucket and daily-quota arithmetic (spec, Limits: project rate limits). Pure: the caller
 * supplies the clock. A bucket holds up to `burst` tokens and refills `perMinute` tokens a minute.
 */

export interface BucketPolicy {
  readonly perMinute: number
  readonly burst: number
}

export interface BucketState {
  readonly tokens: number
  readonly updatedMs: number
}

export interface Grant {
  /** How many of the requested tokens were granted (requests are granted in arrival order). */
  readonly granted: number
  /** Whole tokens left after the grant. */
  readonly remaining: number
  /** Unix seconds at which the bucket is full again. */
  readonly resetAt: number
  /** Seconds until one more token is available; 0 when one is available now. */
  readonly retryAfter: number
}

const perMs = (policy: BucketPolicy) => policy.perMinute / 60_000

export const refill = (policy: BucketPolicy, state: BucketState | undefined, nowMs: number): number =>
  state === undefined
    ? policy.burst
    : Math.min(policy.burst, state.tokens + Math.max(0, nowMs - state.updatedMs) * perMs(policy))

/** The outcome of a grant for tokens left at `tokens` (after the take) at `nowMs`. */
export const describe = (policy: BucketPolicy, tokens: number, granted: number, nowMs: number): Grant => {
  const rate = perMs(policy)
  const toFull = (policy.burst - tokens) / rate
  const toOne = tokens >= 1 ? 0 : (1 - tokens) / rate
  return {
    granted,
    remaining: Math.max(0, Math.floor(tokens)),
    resetAt: Math.ceil((nowMs + toFull) / 1000),
    retryAfter: Math.ceil(toOne / 1000)
  }
}

/** Takes up to `n` tokens. */
export const take = (
  policy: BucketPolicy,
  state: BucketState | undefined,
  n: number,
  nowMs: number
): { readonly state: BucketState; readonly grant: Grant } => {
  const available = refill(policy, state, nowMs)
  const granted = Math.max(0, Math.min(n, Math.floor(available)))
  const tokens = available - granted
  return { state: { tokens, updatedMs: Math.max(nowMs, state?.updatedMs ?? nowMs) }, grant: describe(policy, tokens, granted, nowMs) }
}

/**
 * Takes all `n` tokens or none (a cost measured in bytes, say): the state after the take, or the
 * whole seconds until `n` are there (at least 1).
 */
export const takeWhole = (
  policy: BucketPolicy,
  state: BucketState | undefined,
  n: number,
  nowMs: number
): { readonly state: BucketState } | { readonly retryAfter: number } => {
  const available = refill(policy, state, nowMs)
  if (available < n) return { retryAfter: Math.max(1, Math.ceil((n - available) / perMs(policy) / 1000)) }
  return { state: { tokens: available - n, updatedMs: Math.max(nowMs, state?.updatedMs ?? nowMs) } }
}

/** The UTC day of a timestamp, `YYYY-MM-DD`. */
export const utcDay = (nowMs: number): string => new Date(nowMs).toISOString().slice(0, 10)

/** Unix seconds of the next 00:00 UTC. */
export const nextUtcMidnight = (nowMs: number): number => {
  const d = new Date(nowMs)
  return Math.floor(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1) / 1000)
}

/** A rate limit's answer to one request: its bucket's (or the daily quota's) state after it. */
export interface Decision {
  readonly allowed: boolean
  /** Burst capacity, or the daily quota when the quota decided. */
  readonly limit: number
  readonly remaining: number
  /** Unix seconds. */
  readonly resetAt: number
  /** Whole seconds until a retry can succeed; undefined when unknown (quota denial). */
  readonly retryAfter: number | undefined
}
