/**
 * Per-project rate limits: the standard and execute token buckets and the optional daily
 * execution quota. In memory without a database; on Postgres the buckets are rows shared by
 * every process, and concurrent takes on one bucket are coalesced into a single statement so a
 * busy project costs one round trip per batch rather than per request.
 */
import { Context, Deferred, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../src/Config.ts"
import { type BucketPolicy, type BucketState, describe, nextUtcMidnight, take, utcDay } from "../domain/TokenBucket.ts"
import { StoreUnavailable } from "./EventStore.ts"

export type BucketKind = "standard" | "execute"

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

export interface RateLimiterShape {
  readonly take: (projectId: string, kind: BucketKind) => Effect.Effect<Decision, StoreUnavailable>
  /** Counts one execution request against the daily quota; undefined when no quota is set. */
  readonly takeDaily: (projectId: string) => Effect.Effect<Decision | undefined, StoreUnavailable>
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()("app/infra/RateLimiter") {}

interface Taken {
  readonly granted: number
  readonly tokens: number
  readonly nowMs: number
}

/** Groups concurrent takes per key: while one statement runs, new arrivals wait for the next. */
const coalesced = <E>(run: (key: string, n: number) => Effect.Effect<Taken, E>) => {
  interface Waiter { readonly done: Deferred.Deferred<{ readonly index: number; readonly taken: Taken }, E> }
  const queues = new Map<string, { waiting: Array<Waiter>; running: boolean }>()
  const drain = (key: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      const entry = queues.get(key)
      if (entry === undefined || entry.waiting.length === 0) {
        queues.delete(key)
        return Effect.void
      }
      const batch = entry.waiting
      entry.waiting = []
      entry.running = true
      return run(key, batch.length).pipe(
        Effect.matchEffect({
          onFailure: (error) => Effect.forEach(batch, (w) => Deferred.fail(w.done, error), { discard: true }),
          onSuccess: (taken) =>
            Effect.forEach(batch, (w, index) => Deferred.succeed(w.done, { index, taken }), { discard: true })
        }),
        Effect.andThen(drain(key))
      )
    })
  return (key: string) =>
    Effect.gen(function*() {
      const done = yield* Deferred.make<{ readonly index: number; readonly taken: Taken }, E>()
      let entry = queues.get(key)
      if (entry === undefined) {
        entry = { waiting: [], running: false }
        queues.set(key, entry)
      }
      entry.waiting.push({ done })
      if (!entry.running) {
        entry.running = true
        yield* Effect.forkDetach(drain(key))
      }
      return yield* Deferred.await(done)
    })
}

const policies = (config: AppConfig["Service"]): Record<BucketKind, BucketPolicy> => ({
  standard: { perMinute: config.rateLimits.requestsPerMinute, burst: config.rateLimits.requestBurst },
  execute: { perMinute: config.rateLimits.executePerMinute, burst: config.rateLimits.executeBurst }
})

const bucketDecision = (policy: BucketPolicy, index: number, taken: Taken): Decision => {
  const grant = describe(policy, taken.tokens, taken.granted, taken.nowMs)
  const allowed = index < taken.granted
  return {
    allowed,
    limit: policy.burst,
    remaining: grant.remaining,
    resetAt: grant.resetAt,
    retryAfter: allowed ? undefined : Math.max(1, grant.retryAfter)
  }
}

const quotaDecision = (quota: number, used: number, allowed: boolean, nowMs: number): Decision => ({
  allowed,
  limit: quota,
  remaining: Math.max(0, quota - used),
  resetAt: nextUtcMidnight(nowMs),
  retryAfter: undefined
})

export const layerMemory: Layer.Layer<RateLimiter, never, AppConfig> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const policy = policies(config)
    const buckets = new Map<string, BucketState>()
    // Counts of the current UTC day only; a new day starts from an empty map.
    const quotas = new Map<string, number>()
    let quotaDay = ""
    return RateLimiter.of({
      take: (projectId, kind) =>
        Effect.sync(() => {
          const key = `${kind}:${projectId}`
          const now = Date.now()
          const result = take(policy[kind], buckets.get(key), 1, now)
          buckets.set(key, result.state)
          return bucketDecision(policy[kind], 0, { granted: result.grant.granted, tokens: result.state.tokens, nowMs: now })
        }),
      takeDaily: (projectId) =>
        Effect.sync(() => {
          const quota = config.rateLimits.dailyExecutions
          if (quota === undefined) return undefined
          const now = Date.now()
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
        })
    })
  })
)

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

export const layerPg: Layer.Layer<RateLimiter, never, AppConfig | SqlClient.SqlClient> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const policy = policies(config)

    const takeBucket = (kind: BucketKind) =>
      coalesced((projectId: string, n: number) => {
        const p = policy[kind]
        const perMs = p.perMinute / 60_000
        // Refill, grant up to n in one locked row update, using the database clock so that
        // processes with skewed clocks agree.
        return sql`
          INSERT INTO rate_buckets (bucket, tokens, updated_ms)
          VALUES (${`${kind}:${projectId}`}, ${p.burst}::float8, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)
          ON CONFLICT (bucket) DO NOTHING`.pipe(
          Effect.andThen(sql<{ granted: number; tokens: number; now_ms: number }>`
            WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms),
            cur AS (
              SELECT least(${p.burst}::float8, tokens + greatest(0, (SELECT ms FROM now) - updated_ms) * ${perMs}::float8) AS t
              FROM rate_buckets WHERE bucket = ${`${kind}:${projectId}`} FOR UPDATE
            )
            UPDATE rate_buckets SET
              tokens = cur.t - least(${n}::float8, floor(cur.t)),
              updated_ms = greatest(updated_ms, (SELECT ms FROM now)::bigint)
            FROM cur WHERE bucket = ${`${kind}:${projectId}`}
            RETURNING least(${n}::float8, floor(cur.t))::float8 AS granted, (cur.t - least(${n}::float8, floor(cur.t)))::float8 AS tokens,
                      (SELECT ms FROM now) AS now_ms`),
          Effect.map((rows) => {
            const row = rows[0]
            return row === undefined
              ? { granted: 0, tokens: 0, nowMs: Date.now() }
              : { granted: Number(row.granted), tokens: Number(row.tokens), nowMs: Number(row.now_ms) }
          }),
          Effect.mapError(unavailable)
        )
      })

    const takers = { standard: takeBucket("standard"), execute: takeBucket("execute") }

    const quota = config.rateLimits.dailyExecutions
    const takeQuota = coalesced((projectId: string, n: number) =>
      sql`INSERT INTO rate_quotas (bucket, day, used) VALUES (${projectId}, (now() AT TIME ZONE 'UTC')::date, 0)
          ON CONFLICT (bucket, day) DO NOTHING`.pipe(
        Effect.andThen(sql<{ granted: number; used: number }>`
          WITH cur AS (
            SELECT used FROM rate_quotas
            WHERE bucket = ${projectId} AND day = (now() AT TIME ZONE 'UTC')::date FOR UPDATE
          )
          UPDATE rate_quotas q SET used = least(${quota ?? 0}::bigint, cur.used + ${n})
          FROM cur WHERE q.bucket = ${projectId} AND q.day = (now() AT TIME ZONE 'UTC')::date
          RETURNING q.used::float8 AS used, (q.used - cur.used)::float8 AS granted`),
        Effect.map((rows) => ({ granted: Number(rows[0]?.granted ?? 0), tokens: Number(rows[0]?.used ?? 0), nowMs: Date.now() })),
        Effect.mapError(unavailable)
      )
    )

    return RateLimiter.of({
      take: (projectId, kind) =>
        Effect.map(takers[kind](projectId), ({ index, taken }) => bucketDecision(policy[kind], index, taken)),
      takeDaily: (projectId) =>
        quota === undefined
          ? Effect.succeed(undefined)
          : Effect.map(takeQuota(projectId), ({ index, taken }) =>
            quotaDecision(quota, taken.tokens, index < taken.granted, taken.nowMs))
    })
  })
)
