/**
 * The per-project rate limit of one authenticated request (decisions.md section 2): a token from
 * the standard bucket, or for an execution request (`POST /v1/execute`, an MCP `tools/call` that
 * executes) from the execute bucket and then the daily quota. Used by the API's middleware
 * (http/server/MiddlewareLive.ts) for the requests it serves, by the edge (http/server/Edge.ts)
 * for those it refuses after the key (media type, size, body content), and by the MCP gateway for
 * its tool calls, so that every authenticated request counts, every answer behind the limit
 * carries its headers, and a refusal reads the same wherever it is made.
 */
import { Clock, Effect } from "effect"
import { normalized } from "../../domain/Errors.ts"
import type { Decision, RateLimiterShape } from "./RateLimiter.ts"

/** A request's decision, and whether the daily quota made it (rather than a bucket). */
export interface Throttled extends Decision {
  readonly dailyQuota?: true
}

export const rateHeaders = (decision: Decision): Record<string, string> => ({
  "ratelimit-limit": String(decision.limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(decision.resetAt)
})

/** The refusal's words for the standard bucket, on /v1 and /mcp alike. */
export const STANDARD_EXHAUSTED = "The project's rate limit is exhausted."

const exhaustedMessage = (decision: Throttled, execute: boolean) =>
  decision.dailyQuota === true
    ? "The project's daily execution quota is used up; it resets at 00:00 UTC."
    : execute
    ? "The project's execute rate limit is exhausted."
    : STANDARD_EXHAUSTED

/** The quota's refusal: its wait is until the next UTC midnight. */
const quotaRefusal = (daily: Decision, now: number): Throttled => ({ ...daily, retryAfter: Math.max(1, daily.resetAt - Math.floor(now / 1000)), dailyQuota: true })

/**
 * The request's decision: its bucket's, or past the execute bucket the daily quota's when that
 * refuses. An execute request the bucket refuses while the quota is used up is refused for the
 * quota too: the bucket's short wait would have the client retry in vain until midnight (each
 * refusal takes its token, decisions.md section 2, so refusals past the quota drain the bucket).
 */
export const takeTokens = (limiter: RateLimiterShape, projectId: string, execute: boolean): Effect.Effect<Throttled> =>
  Effect.flatMap(Effect.orDie(limiter.take(projectId, execute ? "execute" : "standard")), (decision): Effect.Effect<Throttled> => {
    if (!execute) return Effect.succeed(decision)
    if (!decision.allowed) {
      return Effect.map(Effect.zip(Effect.orDie(limiter.dailyUsedUp(projectId)), Clock.currentTimeMillis), ([daily, now]) =>
        daily === undefined ? decision : quotaRefusal(daily, now))
    }
    return Effect.map(Effect.zip(Effect.orDie(limiter.takeDaily(projectId)), Clock.currentTimeMillis), ([daily, now]) =>
      daily === undefined || daily.allowed ? decision : quotaRefusal(daily, now))
  })

/** The normalized refusal of a request its decision refuses. */
export const rateLimitedError = (decision: Throttled, execute: boolean) =>
  normalized("rate_limited", exhaustedMessage(decision, execute), decision.retryAfter ?? 1)
