/**
 * The runner lease (infra/actors/Runner.ts) and the keyed leases on top of it (Leases.ts), on a
 * real Postgres: a lost connection does not lose the lease; a lease that cannot be renewed ends
 * its incarnation, and every actor in it, before the row expires for the peers; keyed leases
 * have one holder at a time and pass on when a holder's lease lapses.
 */
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Layer, Logger, ManagedRuntime, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Leases, layerPg as leasesPg } from "../../../infra/actors/Leases.ts"
import { layerMemory, layerPg, Runner, runnerMigrations } from "../../../infra/actors/Runner.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { toRecord } from "../../../infra/observability/Logging.ts"
import { configLayer } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../support/Database.ts"
import { startTcpProxy, type TcpProxy } from "../../support/TcpProxy.ts"

const TTL_MS = 2_000

const runnerOn = (url: string, logger: Layer.Layer<never> = Layer.empty) =>
  ManagedRuntime.make(
    Layer.merge(layerPg, leasesPg).pipe(
      Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 4, applicationName: "runner_test" })),
      Layer.provide(configLayer({ SERVICE_LEASE_TTL_MS: String(TTL_MS) })),
      Layer.provide(logger)
    )
  )

type RunnerRuntime = ReturnType<typeof runnerOn>

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const currentId = (runtime: RunnerRuntime) =>
  runtime.runPromise(Effect.gen(function*() {
    return (yield* (yield* Runner).current).id
  }))

/** Forks a fiber into the current incarnation's scope; resolves with the time it was interrupted. */
const actorIn = (runtime: RunnerRuntime) =>
  runtime.runPromise(Effect.gen(function*() {
    // The test's own scope stays open: only the runner's end of the incarnation may stop the actor.
    const host = yield* Scope.make()
    const incarnation = yield* (yield* Runner).current
    const stopped = yield* Deferred.make<number>()
    const fiber = yield* Effect.forkIn(
      Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(stopped, Date.now()))),
      yield* incarnation.actorScope(host)
    )
    // Settled by the runtime's disposal too; a test that never awaits it must not leave a rejection.
    const whenStopped = runtime.runPromise(Deferred.await(stopped))
    whenStopped.catch(() => undefined)
    return { fiber, stopped: whenStopped }
  }))

describe("runner leases", () => {
  it("memory mode has one incarnation that is always alive", async () => {
    const runtime = ManagedRuntime.make(layerMemory)
    const [id, alive] = await runtime.runPromise(Effect.gen(function*() {
      const runner = yield* Runner
      return [(yield* runner.current).id, yield* runner.alive] as const
    }))
    expect(alive.has(id)).toBe(true)
    await runtime.dispose()
  })
})

describe.skipIf(!postgresAvailable)("runner leases on Postgres", () => {
  let url: string
  let proxy: TcpProxy
  beforeAll(async () => {
    url = await createTestDatabase("runner")
    await Effect.runPromise(runMigrations(runnerMigrations).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))))
    proxy = await startTcpProxy(url)
  }, 60_000)
  afterAll(async () => {
    await proxy?.close()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("a terminated connection does not lose the lease: the incarnation and its actors go on", async () => {
    const runtime = runnerOn(url)
    const id = await currentId(runtime)
    const actor = await actorIn(runtime)
    // Terminate every backend of the runner's pool, again and again, for two TTLs.
    for (let i = 0; i < 20; i++) {
      await runSql(url, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'runner_test' AND pid <> pg_backend_pid()`)
      await sleep(TTL_MS / 10)
    }
    expect(await currentId(runtime)).toBe(id)
    expect(actor.fiber.pollUnsafe()).toBeUndefined()
    const alive = await runtime.runPromise(Effect.gen(function*() {
      return yield* (yield* Runner).alive
    }))
    expect(alive.has(id)).toBe(true)
    await runtime.dispose()
    // A clean stop gives the lease up at once.
    expect(await runSql(url, `SELECT runner_id FROM runners WHERE runner_id = '${id}'`)).toEqual([])
  }, 30_000)

  it("a lease that cannot be renewed stops its actors before the row expires for the peers, then a new incarnation starts", async () => {
    const lines: Array<{ level: string; message: string }> = []
    const runtime = runnerOn(proxy.url(url), Logger.layer([Logger.make((options) => void lines.push(toRecord(options)))]))
    const id = await currentId(runtime)
    const actor = await actorIn(runtime)
    const pausedAt = performance.now()
    proxy.pause()
    const stoppedAt = await actor.stopped
    const [row] = await runSql<{ expires_ms: string }>(url,
      `SELECT (extract(epoch FROM expires_at) * 1000)::bigint::text AS expires_ms FROM runners WHERE runner_id = '${id}'`)
    // The row still exists (nobody could delete it through the paused link) and had not expired
    // when the actor was stopped: no peer could have taken over while it ran.
    expect(row).toBeDefined()
    expect(stoppedAt).toBeLessThan(Number(row!.expires_ms))
    // Down for a while after the lease was lost, so registrations are refused too.
    await sleep(1_500)
    const awaySeconds = (performance.now() - pausedAt) / 1000
    proxy.resume()
    let next = id
    for (let i = 0; i < 100 && next === id; i++) {
      next = await currentId(runtime)
      if (next === id) await sleep(100)
    }
    expect(next).not.toBe(id)
    // Outside audit: the new incarnation was never logged, so an operator saw the lease lost and
    // nothing after; and a refused registration was a warning per retry.
    expect(lines.filter((line) => line.message.startsWith(`runner lease ${id} lost`))).toHaveLength(1)
    // Official CI: a renewal that got no answer at all was said only when its wait ended before
    // the fence's; when the fence won the tie, the lease was lost without a word on why.
    const silent = lines.findIndex((line) => line.message.startsWith("runner lease: the database did not answer a renewal"))
    expect(lines[silent]?.level).toBe("warn")
    expect(silent).toBeLessThan(lines.findIndex((line) => line.message.startsWith(`runner lease ${id} lost`)))
    const registered = lines.filter((line) => line.message.startsWith(`runner lease: registered anew as ${next}`))
    expect(registered.map((line) => line.level)).toEqual(["info"])
    // Outside audit: the line counted from the first refused registration, after the lease was
    // lost, and so said 1.5 s of a 3.3 s outage; it counts from the first renewal that failed.
    const said = Number(/after ([\d.]+) s without the database/.exec(registered[0]?.message ?? "")?.[1])
    expect(said).toBeGreaterThanOrEqual(awaySeconds - 0.4)
    expect(lines.filter((line) => line.message === "runner lease: cannot register; retrying").length).toBeLessThanOrEqual(1)
    await runtime.dispose()
  }, 30_000)

  it("the rows a killed process left behind (its runner and its keyed leases) are swept when a runner starts", async () => {
    await runSql(url, `INSERT INTO runners (runner_id, expires_at, host, pid) VALUES
      ('run_killed_long_ago', now() - interval '1 hour', 'gone', 1),
      ('run_just_expired', now() - interval '1 millisecond', 'gone', 2)`)
    await runSql(url, `INSERT INTO actor_leases (lease_key, runner_id) VALUES ('lane/orphan', 'run_killed_long_ago')`)
    const runtime = runnerOn(url)
    const id = await currentId(runtime)
    const runners = async () => (await runSql<{ runner_id: string }>(url, `SELECT runner_id FROM runners ORDER BY runner_id`)).map((r) => r.runner_id)
    let left = await runners()
    for (let i = 0; i < 50 && left.includes("run_killed_long_ago"); i++) {
      await sleep(100)
      left = await runners()
    }
    // Expired for longer than a TTL: gone, with its leases. Just expired: kept a while (a process
    // reading owners may still be deciding about it; it protects nothing either way).
    expect(left).toEqual(expect.arrayContaining([id, "run_just_expired"]))
    expect(left).not.toContain("run_killed_long_ago")
    expect(await runSql(url, `SELECT lease_key FROM actor_leases WHERE lease_key = 'lane/orphan'`)).toEqual([])
    await runtime.dispose()
    await runSql(url, `DELETE FROM runners WHERE runner_id = 'run_just_expired'`)
  }, 30_000)

  it("a keyed lease has one holder at a time and passes on when its holder's lease lapses", async () => {
    const a = runnerOn(url)
    const b = runnerOn(url)
    const take = (runtime: RunnerRuntime, key: string) =>
      runtime.runPromise(Effect.gen(function*() {
        const incarnation = yield* (yield* Runner).current
        return yield* (yield* Leases).tryAcquire(incarnation, key)
      }))
    const give = (runtime: RunnerRuntime, key: string) =>
      runtime.runPromise(Effect.gen(function*() {
        const incarnation = yield* (yield* Runner).current
        yield* (yield* Leases).release(incarnation, key)
      }))
    expect(await take(a, "lane/1")).toBe(true)
    expect(await take(a, "lane/1")).toBe(true)
    expect(await take(b, "lane/1")).toBe(false)
    // Many keys asked at once share statements and each gets its own answer.
    const many = await Promise.all(Array.from({ length: 50 }, (_, i) => take(b, `lane/${i}`)))
    expect(many.map((granted, i) => granted === (i !== 1))).toEqual(many.map(() => true))
    await give(a, "lane/1")
    expect(await take(b, "lane/1")).toBe(true)
    expect(await take(a, "lane/1")).toBe(false)
    // b's lease lapses (as if its process froze): a may take what b held.
    const idB = await currentId(b)
    await runSql(url, `UPDATE runners SET expires_at = now() - interval '1 second' WHERE runner_id = '${idB}'`)
    expect(await take(a, "lane/1")).toBe(true)
    await a.dispose()
    await b.dispose()
  }, 30_000)
})

