/**
 * Per-project rate limits: the standard and execute token buckets and the optional daily
 * execution quota, and their in-memory implementation. On Postgres (PgRateLimiter.ts) the
 * buckets are rows shared by every process, and concurrent takes on one bucket are coalesced into
 * a single statement so a busy project costs one round trip per batch rather than per request.
 */
import { Clock, Context, Deferred, Effect, Exit, Layer } from "effect"
import { makeBatcher, type Waiting } from "../Batcher.ts"
import { type RateLimitSettings, rateLimits } from "./AccessSettings.ts"
import { type BucketPolicy, type BucketState, type Decision, describe, nextUtcMidnight, take, utcDay } from "../../domain/TokenBucket.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"

export type BucketKind = "standard" | "execute"

export type { Decision } from "../../domain/TokenBucket.ts"

export interface RateLimiterShape {
  readonly take: (projectId: string, kind: BucketKind) => Effect.Effect<Decision, StoreUnavailable>
  /** Counts one execution request against the daily quota; undefined when no quota is set. */
  readonly takeDaily: (projectId: string) => Effect.Effect<Decision | undefined, StoreUnavailable>
  /** The daily quota's refusal if it is used up today, without counting anything; else undefined. */
  readonly dailyUsedUp: (projectId: string) => Effect.Effect<Decision | undefined, StoreUnavailable>
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()("app/infra/RateLimiter") {}

export interface Taken {
  readonly granted: number
  /** Left in the bucket, counting tokens lent to this process. */
  readonly tokens: number
  readonly nowMs: number
}

export interface Place {
  readonly index: number
  readonly taken: Taken
}

/** Answers a group's waiters: each learns its place among the group and what the group got. */
export const answer = <E>(waiting: ReadonlyArray<Waiting<unknown, Place, E>>, outcome: Exit.Exit<Taken, E>) =>
  waiting.forEach((w, index) => Deferred.doneUnsafe(w.done, Exit.map(outcome, (taken) => ({ index, taken }))))

/** Concurrent takes per key (the daily quota): each key's takers share one statement (infra/Batcher.ts). */
export const coalesced = <E>(run: (key: string, n: number) => Effect.Effect<Taken, E>) =>
  makeBatcher<string, Place, E>({
    maxBatch: 10_000,
    serve: (batch) => {
      const groups = [...Map.groupBy(batch, (w) => w.input)].map(([key, waiting]) => ({ key, waiting }))
      return Effect.forEach(groups, ({ key, waiting }) => Effect.map(Effect.exit(run(key, waiting.length)), (outcome) => answer(waiting, outcome)), {
        concurrency: "unbounded",
        discard: true
      })
    }
  })

export const policies = (limits: RateLimitSettings): Record<BucketKind, BucketPolicy> => ({
  standard: { perMinute: limits.requestsPerMinute, burst: limits.requestBurst },
  execute: { perMinute: limits.executePerMinute, burst: limits.executeBurst }
})

/**
 * The decision for the taker at `index` of a take shared by several (`taken` is the bucket after
 * all of them): a granted taker took its token when the takers after it had not yet, so what it
 * has left counts theirs as still in the bucket.
 */
export const bucketDecision = (policy: BucketPolicy, index: number, taken: Taken): Decision => {
  const allowed = index < taken.granted
  const left = allowed ? taken.tokens + (taken.granted - 1 - index) : taken.tokens
  const grant = describe(policy, left, taken.granted, taken.nowMs)
  return {
    allowed,
    limit: policy.burst,
    remaining: grant.remaining,
    resetAt: grant.resetAt,
    retryAfter: allowed ? undefined : Math.max(1, grant.retryAfter)
  }
}

export const quotaDecision = (quota: number, used: number, allowed: boolean, nowMs: number): Decision => ({
  allowed,
  limit: quota,
  remaining: Math.max(0, quota - used),
  resetAt: nextUtcMidnight(nowMs),
  retryAfter: undefined
})

export const layerMemory = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const limits = yield* rateLimits
    const policy = policies(limits)
    const buckets = new Map<string, BucketState>()
    // Counts of the current UTC day only; a new day starts from an empty map.
    const quotas = new Map<string, number>()
    let quotaDay = ""
    return RateLimiter.of({
      take: (projectId, kind) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const key = `${kind}:${projectId}`
          const result = take(policy[kind], buckets.get(key), 1, now)
          buckets.set(key, result.state)
          return bucketDecision(policy[kind], 0, { granted: result.grant.granted, tokens: result.state.tokens, nowMs: now })
        }),
      takeDaily: (projectId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const quota = limits.dailyExecutions
          if (quota === undefined) return undefined
          const today = utcDay(now)
          if (today !== quotaDay) {
            quotas.clear()
            quotaDay = today
          }
          const key = projectId
          const used = quotas.get(key) ?? 0
          const allowed = used < quota
          if (allowed) quotas.set(key, used + 1)
          return quotaDecision(quota, allowed ? used + 1 : used, allowed, now)
        }),
      dailyUsedUp: (projectId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const quota = limits.dailyExecutions
          if (quota === undefined || utcDay(now) !== quotaDay || (quotas.get(projectId) ?? 0) < quota) return undefined
          return quotaDecision(quota, quota, false, now)
        })
    })
  })
)

