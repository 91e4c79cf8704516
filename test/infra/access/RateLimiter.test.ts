import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { afterEach, vi } from "vitest"
import { nextUtcMidnight } from "../../../domain/TokenBucket.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import * as PgRateLimiter from "../../../infra/access/PgRateLimiter.ts"
import * as RateLimiter from "../../../infra/access/RateLimiter.ts"
import { migrations as allMigrations } from "../../../src/App.ts"
import { configLayer, type Env } from "../../support/Config.ts"
import { freshDatabaseLayer, postgresAvailable } from "../../support/Database.ts"

type Make<R> = (env: Env) => Layer.Layer<RateLimiter.RateLimiter, unknown, R>

const memory: Make<never> = (env) => RateLimiter.layerMemory.pipe(Layer.provide(configLayer(env)))
const pg: Make<SqlClient.SqlClient> = (env) => PgRateLimiter.layerPg.pipe(Layer.provide(configLayer(env)))

const withLimiter = <A, E, R, R2>(
  make: Make<R>,
  env: Env,
  f: (limiter: RateLimiter.RateLimiterShape) => Effect.Effect<A, E, R2>
) =>
  Effect.flatMap(RateLimiter.RateLimiter, f).pipe(Effect.provide(make(env)))

let project = 0
const freshProject = () => `proj_rl_${process.pid}_${++project}`

/** The same expectations for both stores; `nextDay` moves the store's idea of today forward. */
const suite = <R>(
  it: Vitest.MethodsNonLive<R>,
  make: Make<R>,
  nextDay: (projectId: string) => Effect.Effect<void, unknown, R>
) => {
  it.effect("without a quota takeDaily answers undefined", () =>
    withLimiter(make, {}, (limiter) =>
      Effect.gen(function*() {
        assert.isUndefined(yield* limiter.takeDaily(freshProject()))
        assert.isUndefined(yield* limiter.dailyUsedUp(freshProject()))
        assert.isUndefined(yield* withLimiter(make, { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "off" }, (l) => l.takeDaily("p")))
        assert.isUndefined(yield* withLimiter(make, { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "0" }, (l) => l.takeDaily("p")))
      })))

  it.effect("says whether the quota is used up today without counting (dailyUsedUp)", () =>
    withLimiter(make, { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "2" }, (limiter) =>
      Effect.gen(function*() {
        const id = freshProject()
        assert.isUndefined(yield* limiter.dailyUsedUp(id))
        assert.isTrue((yield* limiter.takeDaily(id))?.allowed)
        // Asking counts nothing: the second take is still allowed.
        assert.isUndefined(yield* limiter.dailyUsedUp(id))
        assert.isTrue((yield* limiter.takeDaily(id))?.allowed)
        const usedUp = yield* limiter.dailyUsedUp(id)
        assert.strictEqual(usedUp?.allowed, false)
        assert.strictEqual(usedUp?.limit, 2)
        assert.strictEqual(usedUp?.remaining, 0)
        assert.strictEqual(usedUp?.resetAt, nextUtcMidnight(Date.now()))
        assert.isUndefined(yield* limiter.dailyUsedUp(freshProject()))
        yield* nextDay(id)
        assert.isUndefined(yield* limiter.dailyUsedUp(id))
      })))

  it.effect("counts down the quota one request at a time, then refuses until the next UTC day", () =>
    withLimiter(make, { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "3" }, (limiter) =>
      Effect.gen(function*() {
        const id = freshProject()
        const decisions = []
        for (let i = 0; i < 5; i++) decisions.push(yield* limiter.takeDaily(id))
        assert.deepStrictEqual(decisions.map((d) => d?.allowed), [true, true, true, false, false])
        assert.deepStrictEqual(decisions.map((d) => d?.remaining), [2, 1, 0, 0, 0])
        for (const d of decisions) {
          assert.strictEqual(d?.limit, 3)
          assert.strictEqual(d?.retryAfter, undefined)
          assert.strictEqual(d?.resetAt, nextUtcMidnight(Date.now()))
        }
        // Another project has a quota of its own.
        assert.isTrue((yield* limiter.takeDaily(freshProject()))?.allowed)
        yield* nextDay(id)
        const tomorrow = yield* limiter.takeDaily(id)
        assert.strictEqual(tomorrow?.allowed, true)
        assert.strictEqual(tomorrow?.remaining, 2)
      })))

  it.effect("concurrent requests never overrun the quota", () =>
    withLimiter(make, { SERVICE_RATE_LIMIT_DAILY_EXECUTIONS: "7" }, (limiter) =>
      Effect.gen(function*() {
        const id = freshProject()
        const decisions = yield* Effect.forEach(Array.from({ length: 40 }), () => limiter.takeDaily(id), { concurrency: "unbounded" })
        assert.strictEqual(decisions.filter((d) => d?.allowed).length, 7)
        // Each granted request reports what was left after its own take, not after the others'.
        assert.deepStrictEqual(decisions.filter((d) => d?.allowed).map((d) => d?.remaining ?? -1).toSorted((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6])
        for (const denied of decisions.filter((d) => d?.allowed === false)) assert.strictEqual(denied?.remaining, 0)
        assert.isFalse((yield* limiter.takeDaily(id))?.allowed)
      })))

  it.effect("concurrent takes share the project's bucket: exactly the burst is granted", () =>
    withLimiter(make, { SERVICE_RATE_LIMIT_REQUEST_BURST: "10", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" }, (limiter) =>
      Effect.gen(function*() {
        const id = freshProject()
        const decisions = yield* Effect.forEach(Array.from({ length: 30 }), () => limiter.take(id, "standard"), { concurrency: "unbounded" })
        assert.strictEqual(decisions.filter((d) => d.allowed).length, 10)
        // Each granted request reports the whole tokens left after its own take (decisions.md
        // section 2), and the second its bucket is full again from there.
        const granted = decisions.filter((d) => d.allowed)
        assert.deepStrictEqual(granted.map((d) => d.remaining).toSorted((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        const resetOf = new Map(granted.map((d) => [d.remaining, d.resetAt]))
        assert.isAbove(resetOf.get(0)!, resetOf.get(9)!)
        for (const denied of decisions.filter((d) => !d.allowed)) {
          assert.strictEqual(denied.remaining, 0)
          assert.isAtLeast(denied.retryAfter ?? 0, 1)
        }
        // The execute bucket is separate.
        assert.isTrue((yield* limiter.take(id, "execute")).allowed)
      })))

  it.effect("concurrent takes on many buckets at once: each grants exactly its own burst", () =>
    withLimiter(make, {
      SERVICE_RATE_LIMIT_REQUEST_BURST: "4",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1",
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "2",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1"
    }, (limiter) =>
      Effect.gen(function*() {
        const projects = Array.from({ length: 5 }, () => freshProject())
        const takes = projects.flatMap((id) => [
          ...Array.from({ length: 9 }, () => ({ id, kind: "standard" as const })),
          ...Array.from({ length: 5 }, () => ({ id, kind: "execute" as const }))
        ])
        const decisions = yield* Effect.forEach(takes, (t) => Effect.map(limiter.take(t.id, t.kind), (d) => ({ ...t, d })), {
          concurrency: "unbounded"
        })
        for (const id of projects) {
          assert.strictEqual(decisions.filter((x) => x.id === id && x.kind === "standard" && x.d.allowed).length, 4)
          assert.strictEqual(decisions.filter((x) => x.id === id && x.kind === "execute" && x.d.allowed).length, 2)
        }
      })))

  it.effect("buckets whose refill rates are a whole and a fractional number per ms share one statement", () =>
    // 600,000 a minute is 10 tokens a ms, 1,000,000 is 16.67: one batch holds both kinds of
    // number (it used to fail to encode: "Array parameter elements must have the same inferred OID").
    withLimiter(make, {
      SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
      SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000",
      SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
      SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "1000000"
    }, (limiter) =>
      Effect.gen(function*() {
        const id = freshProject()
        const decisions = yield* Effect.all([limiter.take(id, "standard"), limiter.take(id, "execute")], { concurrency: "unbounded" })
        assert.deepStrictEqual(decisions.map((d) => d.allowed), [true, true])
      })))
}

describe("RateLimiter (memory)", () => {
  afterEach(() => {
    vi.useRealTimers()
  })
  layer(Layer.empty, { excludeTestServices: true })("daily quota", (it) => {
    suite(it, memory, () =>
      Effect.sync(() => {
        vi.useFakeTimers({ toFake: ["Date"] })
        vi.setSystemTime(nextUtcMidnight(Date.now()) * 1000 + 1_000)
      }))
  })
})

const MigratedDatabase = Layer.effectDiscard(runMigrations(allMigrations)).pipe(Layer.provideMerge(freshDatabaseLayer()))

describe.skipIf(!postgresAvailable)("RateLimiter (Postgres)", () => {
  layer(MigratedDatabase, { timeout: 60_000, excludeTestServices: true })("daily quota", (it) => {
    // The quota row is keyed by the database's UTC day; moving it back a day is tomorrow.
    suite(it, pg, (projectId) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE rate_quotas SET day = day - 1 WHERE bucket = ${projectId}`))
  })

  layer(MigratedDatabase, { timeout: 60_000, excludeTestServices: true })("token leases", (it) => {
    // 1,000 tokens refilled at one a minute: the refill during a test is far below one token.
    const roomy = { SERVICE_RATE_LIMIT_REQUEST_BURST: "1000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" }
    const tokensInRow = (projectId: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.map(sql<{ tokens: number }>`SELECT tokens FROM rate_buckets WHERE bucket = ${`standard:${projectId}`}`, (rows) =>
          Number(rows[0]?.tokens)))
    const setTokens = (projectId: string, tokens: number) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`UPDATE rate_buckets SET tokens = ${tokens}, updated_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
            WHERE bucket = ${`standard:${projectId}`}`)

    it.effect("a roomy bucket lends 1% of its burst: those takes cost no statement and count down alike", () =>
      withLimiter(pg, roomy, (limiter) =>
        Effect.gen(function*() {
          const id = freshProject()
          assert.strictEqual((yield* limiter.take(id, "standard")).remaining, 999)
          // One taken, ten lent to this process.
          assert.closeTo(yield* tokensInRow(id), 989, 0.5)
          for (let i = 0; i < 10; i++) {
            const decision = yield* limiter.take(id, "standard")
            assert.isTrue(decision.allowed)
            assert.strictEqual(decision.remaining, 998 - i)
          }
          assert.closeTo(yield* tokensInRow(id), 989, 0.5)
          // The lease is spent: the next take is a statement again (and borrows again).
          assert.strictEqual((yield* limiter.take(id, "standard")).remaining, 988)
          assert.closeTo(yield* tokensInRow(id), 978, 0.5)
        })))

    it.effect("nothing is lent below a burst of 100 or beyond half the bucket, and leftovers go back", () =>
      Effect.gen(function*() {
        const small = freshProject()
        yield* withLimiter(pg, { SERVICE_RATE_LIMIT_REQUEST_BURST: "99", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "1" }, (limiter) =>
          limiter.take(small, "standard"))
        assert.closeTo(yield* tokensInRow(small), 98, 0.5)

        const id = freshProject()
        yield* withLimiter(pg, roomy, (limiter) =>
          Effect.gen(function*() {
            yield* limiter.take(id, "standard")
            yield* setTokens(id, 505)
            // The local lease is spent first, then a statement: one taken, four lent (down to 500).
            for (let i = 0; i < 11; i++) yield* limiter.take(id, "standard")
            assert.closeTo(yield* tokensInRow(id), 500, 0.5)
            for (let i = 0; i < 4; i++) yield* limiter.take(id, "standard")
            // At half the bucket a statement lends nothing.
            assert.strictEqual((yield* limiter.take(id, "standard")).remaining, 499)
            assert.closeTo(yield* tokensInRow(id), 499, 0.5)
            yield* limiter.take(id, "standard")
            assert.closeTo(yield* tokensInRow(id), 498, 0.5)
          }))
        // A limiter that stops gives back what it still holds.
        const returned = freshProject()
        yield* withLimiter(pg, roomy, (limiter) => limiter.take(returned, "standard"))
        assert.closeTo(yield* tokensInRow(returned), 999, 0.5)
      }))

    it.effect("two processes leasing from one bucket grant exactly its burst between them", () =>
      withLimiter(pg, roomy, (a) =>
        withLimiter(pg, roomy, (b) =>
          Effect.gen(function*() {
            const id = freshProject()
            const decisions = yield* Effect.forEach(Array.from({ length: 1500 }, (_, i) => i), (i) => (i % 2 === 0 ? a : b).take(id, "standard"), {
              concurrency: 64
            })
            assert.strictEqual(decisions.filter((d) => d.allowed).length, 1000)
          }))))
  })
})
