/**
 * The per-project rate limit of one authenticated request (decisions.md section 2): a token from
 * the standard bucket, or for `POST /v1/execute` from the execute bucket and then the daily
 * quota. Used by the API's middleware (MiddlewareLive.ts) for the requests it serves and by the
 * edge (Edge.ts) for those it refuses after the key (media type, size, body content), so that
 * every authenticated request counts and every answer behind the limit carries its headers.
 */
import { Clock, Effect } from "effect"
import { normalized } from "../../domain/Errors.ts"
import type { Decision, RateLimiterShape } from "../../infra/access/RateLimiter.ts"

export const rateHeaders = (decision: Decision): Record<string, string> => ({
  "ratelimit-limit": String(decision.limit),
  "ratelimit-remaining": String(decision.remaining),
  "ratelimit-reset": String(decision.resetAt)
})

export const exhaustedMessage = (execute: boolean) =>
  execute ? "The project's execute rate limit is exhausted." : "The project's rate limit is exhausted."

/** The request's decision: its bucket's, or past the execute bucket the daily quota's when that refuses. */
export const takeTokens = (limiter: RateLimiterShape, projectId: string, execute: boolean): Effect.Effect<Decision> =>
  Effect.flatMap(Effect.orDie(limiter.take(projectId, execute ? "execute" : "standard")), (decision) =>
    !execute || !decision.allowed
      ? Effect.succeed(decision)
      : Effect.map(Effect.zip(Effect.orDie(limiter.takeDaily(projectId)), Clock.currentTimeMillis), ([daily, now]) =>
        daily === undefined || daily.allowed ? decision : { ...daily, retryAfter: Math.max(1, daily.resetAt - Math.floor(now / 1000)) }))

/** The normalized refusal of a request its decision refuses. */
export const rateLimitedError = (decision: Decision, execute: boolean) => normalized("rate_limited", exhaustedMessage(execute), decision.retryAfter ?? 1)
