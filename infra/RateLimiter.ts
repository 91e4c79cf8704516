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

/** The token take as one round trip for many buckets (migrations 3-9 belong to rate limits). */
export const rateLimitMigrations = [{
  id: 3,
  name: "take_rate_tokens",
  statements: [
    // Creates missing buckets full, then refills and takes in one locked update, in bucket order
    // (so concurrent callers cannot deadlock), on the database clock (processes with skewed
    // clocks agree). Returns what each bucket granted and what it has left.
    `CREATE FUNCTION take_rate_tokens(buckets text[], bursts float8[], per_ms float8[], wants int4[])
     RETURNS TABLE (bucket_id text, granted float8, left_tokens float8, now_ms float8)
     LANGUAGE plpgsql VOLATILE AS $$
     DECLARE
       at_ms float8 := extract(epoch FROM clock_timestamp()) * 1000;
     BEGIN
       INSERT INTO rate_buckets (bucket, tokens, updated_ms)
       SELECT u.b, u.burst, at_ms::bigint FROM unnest(buckets, bursts) AS u(b, burst)
       ON CONFLICT (bucket) DO NOTHING;
       RETURN QUERY
       WITH req AS (
         SELECT * FROM unnest(buckets, bursts, per_ms, wants) AS r(b, burst, pms, n)
       ), cur AS (
         SELECT req.b, req.n, least(req.burst, rb.tokens + greatest(0, at_ms - rb.updated_ms) * req.pms) AS t
         FROM req JOIN rate_buckets rb ON rb.bucket = req.b
         ORDER BY req.b
         FOR UPDATE OF rb
       ), upd AS (
         UPDATE rate_buckets rb SET tokens = cur.t - least(cur.n, floor(cur.t)), updated_ms = greatest(rb.updated_ms, at_ms::bigint)
         FROM cur WHERE rb.bucket = cur.b
         RETURNING cur.b, least(cur.n, floor(cur.t))::float8 AS g, (cur.t - least(cur.n, floor(cur.t)))::float8 AS tk
       )
       SELECT upd.b, upd.g, upd.tk, at_ms FROM upd;
     END $$`
  ]
}] as const

interface BucketTake {
  readonly bucket: string
  readonly policy: BucketPolicy
}

/**
 * Groups concurrent takes of every bucket: while one statement runs, new arrivals (of any
 * bucket) wait for the next, which takes for all of them at once. Each waiter learns its place
 * among its bucket's takers and what the bucket granted.
 */
const batchedAcrossBuckets = <E>(run: (takes: ReadonlyArray<BucketTake & { readonly n: number }>) => Effect.Effect<ReadonlyMap<string, Taken>, E>) => {
  interface Waiter { readonly done: Deferred.Deferred<{ readonly index: number; readonly taken: Taken }, E> }
  let pending = new Map<string, { readonly request: BucketTake; readonly waiters: Array<Waiter> }>()
  let running = false
  const drain: Effect.Effect<void> = Effect.suspend(() => {
    if (pending.size === 0) {
      running = false
      return Effect.void
    }
    const batch = pending
    pending = new Map()
    const takes = [...batch.values()].map(({ request, waiters }) => ({ ...request, n: waiters.length }))
    return run(takes).pipe(
      Effect.matchEffect({
        onFailure: (error) =>
          Effect.forEach(batch.values(), ({ waiters }) => Effect.forEach(waiters, (w) => Deferred.fail(w.done, error), { discard: true }), {
            discard: true
          }),
        onSuccess: (taken) =>
          Effect.forEach(batch.values(), ({ request, waiters }) => {
            const result = taken.get(request.bucket) ?? { granted: 0, tokens: 0, nowMs: Date.now() }
            return Effect.forEach(waiters, (w, index) => Deferred.succeed(w.done, { index, taken: result }), { discard: true })
          }, { discard: true })
      }),
      Effect.andThen(drain)
    )
  })
  return (request: BucketTake) =>
    Effect.gen(function*() {
      const done = yield* Deferred.make<{ readonly index: number; readonly taken: Taken }, E>()
      const entry = pending.get(request.bucket)
      if (entry === undefined) pending.set(request.bucket, { request, waiters: [{ done }] })
      else entry.waiters.push({ done })
      if (!running) {
        running = true
        yield* Effect.forkDetach(drain)
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

    const takeTokens = batchedAcrossBuckets((takes) =>
      sql<{ bucket_id: string; granted: number; left_tokens: number; now_ms: number }>`
        SELECT bucket_id, granted, left_tokens, now_ms FROM take_rate_tokens(
          ${takes.map((t) => t.bucket)}::text[], ${takes.map((t) => t.policy.burst)}::float8[],
          ${takes.map((t) => t.policy.perMinute / 60_000)}::float8[], ${takes.map((t) => t.n)}::int4[])`.pipe(
        Effect.map((rows) =>
          new Map(rows.map((row) => [row.bucket_id, { granted: Number(row.granted), tokens: Number(row.left_tokens), nowMs: Number(row.now_ms) }]))
        ),
        Effect.mapError(unavailable)
      )
    )


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
        Effect.map(takeTokens({ bucket: `${kind}:${projectId}`, policy: policy[kind] }), ({ index, taken }) =>
          bucketDecision(policy[kind], index, taken)),
      takeDaily: (projectId) =>
        quota === undefined
          ? Effect.succeed(undefined)
          : Effect.map(takeQuota(projectId), ({ index, taken }) =>
            quotaDecision(quota, taken.tokens, index < taken.granted, taken.nowMs))
    })
  })
)
