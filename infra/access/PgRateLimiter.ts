/**
 * Per-project rate limits on Postgres (RateLimiter.ts has the contract and the memory store): the
 * buckets and daily quotas are rows shared by every process; concurrent takes of every bucket
 * share one statement, and a process may lease a few tokens to hand out itself.
 */
import { Clock, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { BucketPolicy } from "../../domain/TokenBucket.ts"
import { makeBatcher } from "../Batcher.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import { rateLimits } from "./AccessSettings.ts"
import { answer, bucketDecision, coalesced, type Decision, type Place, policies, quotaDecision, RateLimiter, type Taken } from "./RateLimiter.ts"

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
}, {
  id: 5,
  name: "lease_rate_tokens",
  statements: [
    // As take_rate_tokens, and besides: puts back the tokens a process `returned` (capped at the
    // burst), and lends up to `leases` more tokens to the calling process for it to hand out
    // itself, only as far as the bucket stays at least half full after the grant and the lease.
    `CREATE FUNCTION lease_rate_tokens(buckets text[], bursts float8[], per_ms float8[], wants int4[], leases int4[], returned int4[])
     RETURNS TABLE (bucket_id text, granted float8, leased float8, left_tokens float8, now_ms float8)
     LANGUAGE plpgsql VOLATILE AS $$
     DECLARE
       at_ms float8 := extract(epoch FROM clock_timestamp()) * 1000;
     BEGIN
       -- Tokens need no flush of their own: a crash of the database can only forget some takes.
       PERFORM set_config('synchronous_commit', 'off', true);
       INSERT INTO rate_buckets (bucket, tokens, updated_ms)
       SELECT u.b, u.burst, at_ms::bigint FROM unnest(buckets, bursts) AS u(b, burst)
       ON CONFLICT (bucket) DO NOTHING;
       RETURN QUERY
       WITH req AS (
         SELECT * FROM unnest(buckets, bursts, per_ms, wants, leases, returned) AS r(b, burst, pms, n, l, back)
       ), cur AS (
         SELECT req.b, req.n, req.l, req.burst,
           least(req.burst, rb.tokens + greatest(0, at_ms - rb.updated_ms) * req.pms + req.back) AS t
         FROM req JOIN rate_buckets rb ON rb.bucket = req.b
         ORDER BY req.b
         FOR UPDATE OF rb
       ), given AS (
         SELECT cur.*, least(cur.n, floor(cur.t)) AS g FROM cur
       ), lent AS (
         SELECT given.*, greatest(0, least(given.l, floor(given.t - given.g - given.burst / 2))) AS ls FROM given
       ), upd AS (
         UPDATE rate_buckets rb SET tokens = x.t - x.g - x.ls, updated_ms = greatest(rb.updated_ms, at_ms::bigint)
         FROM lent x WHERE rb.bucket = x.b
         RETURNING x.b, x.g::float8 AS g, x.ls::float8 AS ls, (x.t - x.g - x.ls)::float8 AS tk
       )
       SELECT upd.b, upd.g, upd.ls, upd.tk, at_ms FROM upd;
     END $$`,
    `DROP FUNCTION take_rate_tokens(text[], float8[], float8[], int4[])`
  ]
}] as const

interface BucketTake {
  readonly bucket: string
  readonly policy: BucketPolicy
  /** Tokens to borrow beyond the takers' (`lease_rate_tokens`). */
  readonly lease: number
  /** Unused borrowed tokens given back. */
  readonly returned: number
}

/**
 * Takes of every bucket coalesced (infra/Batcher.ts): while one statement runs, new arrivals (of
 * any bucket) wait for the next, which takes for all of them at once. Each waiter learns its
 * place among its bucket's takers and what the bucket granted.
 */
const batchedAcrossBuckets = <E>(run: (takes: ReadonlyArray<BucketTake & { readonly n: number }>) => Effect.Effect<ReadonlyMap<string, Taken>, E>) =>
  makeBatcher<BucketTake, Place, E>({
    maxBatch: 10_000,
    serve: Effect.fnUntraced(function*(batch) {
      const groups = [...Map.groupBy(batch, (w) => w.input.bucket).values()].map((waiting) => ({
        // Unused borrowed tokens of every taker go back with the bucket's one take.
        request: { ...waiting[0]!.input, returned: waiting.reduce((sum, w) => sum + w.input.returned, 0) },
        waiting
      }))
      const outcome = yield* Effect.exit(run(groups.map(({ request, waiting }) => ({ ...request, n: waiting.length }))))
      const nowMs = yield* Clock.currentTimeMillis
      for (const { request, waiting } of groups) {
        answer(waiting, Exit.map(outcome, (taken) => taken.get(request.bucket) ?? { granted: 0, tokens: 0, nowMs }))
      }
    })
  })

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

/**
 * Token leases (Postgres): a statement may also borrow tokens for this process to hand out
 * itself, so a busy project costs one round trip per lease rather than per request. A lease is at
 * most 1% of the burst (none below a burst of 100: small buckets stay exact), is only granted
 * while the bucket stays at least half full, and lasts a second; so a peer is never refused for
 * tokens this process holds unless a great many processes lease at once. Remaining counts the
 * lent tokens as still in the bucket, so one process reports the same figures as without leases.
 */
const LEASE_MS = 1000
const MAX_LEASE = 64
const leaseSize = (policy: BucketPolicy) => Math.min(MAX_LEASE, Math.floor(policy.burst / 100))

interface Lease {
  stock: number
  readonly left: number
  readonly nowMs: number
  readonly until: number
  readonly policy: BucketPolicy
}

export const layerPg = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const limits = yield* rateLimits
    const sql = yield* SqlClient.SqlClient
    const policy = policies(limits)

    // The float8 arrays travel as text: the driver infers each element's type from its value,
    // and refuses an array mixing whole (10 a ms) and fractional (16.67 a ms) numbers.
    const leaseRows = (takes: ReadonlyArray<BucketTake & { readonly n: number }>) =>
      sql<{ bucket_id: string; granted: number; leased: number; left_tokens: number; now_ms: number }>`
        SELECT bucket_id, granted, leased, left_tokens, now_ms FROM lease_rate_tokens(
          ${takes.map((t) => t.bucket)}::text[], ${takes.map((t) => String(t.policy.burst))}::float8[],
          ${takes.map((t) => String(t.policy.perMinute / 60_000))}::float8[], ${takes.map((t) => t.n)}::int4[],
          ${takes.map((t) => t.lease)}::int4[], ${takes.map((t) => t.returned)}::int4[])`.pipe(Effect.mapError(unavailable))

    // Tokens lent to this process per bucket, handed out without a round trip until spent or
    // stale; what is left then goes back with the bucket's next statement (or the sweep below).
    const leases = new Map<string, Lease>()

    const takeTokens = yield* batchedAcrossBuckets((takes) =>
      Effect.zipWith(leaseRows(takes), Clock.currentTimeMillis, (rows, localNow) => {
        const policyOf = new Map(takes.map((t) => [t.bucket, t.policy]))
        return new Map(rows.map((row) => {
          const leased = Number(row.leased)
          const nowMs = Number(row.now_ms)
          const left = Number(row.left_tokens)
          const bucketPolicy = policyOf.get(row.bucket_id)
          if (leased > 0 && bucketPolicy !== undefined) {
            // A lease taken by a statement that ran meanwhile is kept: its tokens were lent too.
            const stock = leased + (leases.get(row.bucket_id)?.stock ?? 0)
            leases.set(row.bucket_id, { stock, left, nowMs, until: localNow + LEASE_MS, policy: bucketPolicy })
          }
          return [row.bucket_id, { granted: Number(row.granted), tokens: left + leased, nowMs }]
        }))
      })
    )

    /** Gives back what stale leases still hold (every second, and when the service stops). */
    const returnStale = (all: boolean) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const back: Array<BucketTake & { readonly n: number }> = []
        for (const [bucket, lease] of leases) {
          if (!all && now < lease.until) continue
          leases.delete(bucket)
          if (lease.stock > 0) back.push({ bucket, policy: lease.policy, lease: 0, returned: lease.stock, n: 0 })
        }
        return back.length === 0 ? Effect.void : Effect.asVoid(leaseRows(back))
      })
    yield* Effect.forkScoped(
      Effect.forever(Effect.andThen(Effect.sleep(LEASE_MS), returnStale(false).pipe(Effect.catch(() => Effect.void))))
    )
    yield* Effect.addFinalizer(() => returnStale(true).pipe(Effect.catch(() => Effect.void)))

    const takeBucket = (bucket: string, bucketPolicy: BucketPolicy): Effect.Effect<Decision, StoreUnavailable> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const lease = leases.get(bucket)
        if (lease !== undefined && lease.stock >= 1 && now < lease.until) {
          lease.stock--
          return Effect.succeed(bucketDecision(bucketPolicy, 0, { granted: 1, tokens: lease.left + lease.stock, nowMs: lease.nowMs }))
        }
        let returned = 0
        if (lease !== undefined) {
          leases.delete(bucket)
          returned = lease.stock
        }
        return Effect.map(takeTokens({ bucket, policy: bucketPolicy, lease: leaseSize(bucketPolicy), returned }), ({ index, taken }) =>
          bucketDecision(bucketPolicy, index, taken))
      })

    const quota = limits.dailyExecutions
    const takeQuota = yield* coalesced((projectId: string, n: number) =>
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
        Effect.zipWith(Clock.currentTimeMillis, (rows, nowMs) => ({ granted: Number(rows[0]?.granted ?? 0), tokens: Number(rows[0]?.used ?? 0), nowMs })),
        Effect.mapError(unavailable)
      )
    )

    return RateLimiter.of({
      take: (projectId, kind) => takeBucket(`${kind}:${projectId}`, policy[kind]),
      takeDaily: (projectId) =>
        quota === undefined
          ? Effect.succeed(undefined)
          : Effect.map(takeQuota(projectId), ({ index, taken }) => {
            // `taken.tokens` is the count after the whole batch; a granted taker counts up to itself.
            const allowed = index < taken.granted
            return quotaDecision(quota, allowed ? taken.tokens - taken.granted + index + 1 : taken.tokens, allowed, taken.nowMs)
          }),
      dailyUsedUp: (projectId) =>
        quota === undefined
          ? Effect.succeed(undefined)
          : sql<{ used: number }>`SELECT used::float8 AS used FROM rate_quotas
              WHERE bucket = ${projectId} AND day = (now() AT TIME ZONE 'UTC')::date`.pipe(
            Effect.zipWith(Clock.currentTimeMillis, (rows, nowMs) =>
              Number(rows[0]?.used ?? 0) < quota ? undefined : quotaDecision(quota, quota, false, nowMs)),
            Effect.mapError(unavailable)
          )
    })
  })
)
