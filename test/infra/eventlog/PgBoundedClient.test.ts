/**
 * The bounded Postgres client (infra/eventlog/PgBoundedClient.ts): a statement past the bound
 * fails as a lost connection without waiting for the statement to wind down, takes its session
 * with it (a transaction it was part of is not applied), makes the client fail fast until the
 * store answers a probe again; the unbounded client over the same pool is not cut.
 */
import { Effect, Fiber, Redacted } from "effect"
import type { SqlError } from "effect/sql/SqlError"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { storeTimeoutSetting } from "../../../infra/eventlog/Database.ts"
import * as PgBoundedClient from "../../../infra/eventlog/PgBoundedClient.ts"
import { configLayer, type Env } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../support/Database.ts"

const reasonOf = (error: unknown) => (error as SqlError).reason._tag

describe("SERVICE_STORE_TIMEOUT_MS", () => {
  const read = (env: Env) => Effect.runPromise(Effect.result(storeTimeoutSetting.pipe(Effect.provide(configLayer(env)))))

  it("is 5 s by default, 0 for no bound, and refuses what is not an integer in range", async () => {
    expect(await read({})).toMatchObject({ _tag: "Success", success: 5_000 })
    expect(await read({ SERVICE_STORE_TIMEOUT_MS: "1500" })).toMatchObject({ _tag: "Success", success: 1_500 })
    expect(await read({ SERVICE_STORE_TIMEOUT_MS: "0" })).toMatchObject({ _tag: "Success", success: undefined })
    for (const bad of ["x", "-1", "600001"]) {
      const result = await read({ SERVICE_STORE_TIMEOUT_MS: bad })
      expect(result._tag === "Failure" && result.failure.message).toBe(`SERVICE_STORE_TIMEOUT_MS: expected an integer from 0 to 600000, got "${bad}"`)
    }
  })
})

describe("withoutWaiting", () => {
  it("answers at the bound although the effect takes long to wind down, and abandons it", async () => {
    let abandoned = 0
    // Uninterruptible for 2 s: a timeout that waited for it would answer after 2 s.
    const slow = Effect.uninterruptible(Effect.sleep(2_000))
    const started = Date.now()
    const exit = await Effect.runPromiseExit(PgBoundedClient.withoutWaiting(slow, 100, () => abandoned++, () => "timed out"))
    expect(Date.now() - started).toBeLessThan(1_500)
    expect(exit._tag === "Failure" && JSON.stringify(exit.cause)).toContain("timed out")
    expect(abandoned).toBe(1)
  })

  it("passes a quick answer through and abandons nothing", async () => {
    let abandoned = 0
    const value = await Effect.runPromise(PgBoundedClient.withoutWaiting(Effect.succeed(7), 1_000, () => abandoned++, () => "timed out"))
    expect(value).toBe(7)
    expect(abandoned).toBe(0)
  })

  it("an interrupted caller abandons the effect and does not wait for it", async () => {
    let abandoned = 0
    const started = Date.now()
    await Effect.runPromise(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(
        PgBoundedClient.withoutWaiting(Effect.uninterruptible(Effect.sleep(2_000)), 10_000, () => abandoned++, () => "timed out")
      )
      yield* Effect.sleep(50)
      yield* Fiber.interrupt(fiber)
    }))
    expect(Date.now() - started).toBeLessThan(1_500)
    expect(abandoned).toBe(1)
  })
})

describe.skipIf(!postgresAvailable)("the bounded client (Postgres)", () => {
  let url = ""
  beforeAll(async () => {
    url = await createTestDatabase("bound")
    await runSql(url, "CREATE TABLE appended (id int PRIMARY KEY)")
  }, 30_000)
  afterAll(async () => {
    if (url !== "") await dropTestDatabase(url)
  }, 30_000)

  const withClients = <A>(ms: number, f: (clients: PgBoundedClient.PgClients) => Effect.Effect<A, unknown>) =>
    Effect.runPromise(Effect.scoped(Effect.flatMap(
      PgBoundedClient.make({ url: Redacted.make(url), maxConnections: 4, applicationName: "bound-test" }, ms),
      f
    )))

  it("a statement past the bound fails as a lost connection at the bound; the client fails fast until a probe is answered", async () => {
    await withClients(300, ({ bounded }) =>
      Effect.gen(function*() {
        const started = Date.now()
        const error = yield* Effect.flip(bounded`SELECT pg_sleep(3)`)
        expect(reasonOf(error)).toBe("ConnectionError")
        expect(error.message).toContain("no answer within 300 ms")
        expect(Date.now() - started).toBeLessThan(2_000)
        // Taken for hung: the next statement fails at once, without trying.
        const quick = Date.now()
        const next = yield* Effect.flip(bounded`SELECT 1`)
        expect(reasonOf(next)).toBe("ConnectionError")
        expect(next.message).toContain("has not answered since")
        expect(Date.now() - quick).toBeLessThan(100)
        // The store answers the probe (once a second), and the client serves again.
        const deadline = Date.now() + 5_000
        let rows: ReadonlyArray<{ one: number }> | undefined
        while (rows === undefined && Date.now() < deadline) {
          rows = yield* Effect.orElseSucceed(bounded<{ one: number }>`SELECT 1 AS one`, () => undefined)
          if (rows === undefined) yield* Effect.sleep(100)
        }
        expect(rows).toEqual([{ one: 1 }])
      }))
  }, 30_000)

  it("a transaction whose statement ran out of time is not applied, and leaves no session in it", async () => {
    await withClients(300, ({ bounded, unbounded }) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(bounded.withTransaction(Effect.gen(function*() {
          yield* bounded`INSERT INTO appended (id) VALUES (1)`
          yield* bounded`SELECT pg_sleep(2)`
        })))
        expect(JSON.stringify(error)).toContain("no answer within 300 ms")
        // The backend ends its sleep, finds its client gone and rolls back.
        const deadline = Date.now() + 10_000
        let left: ReadonlyArray<{ n: number }> = []
        while (Date.now() < deadline) {
          left = yield* unbounded<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE application_name = 'bound-test' AND state LIKE 'idle in transaction%' OR query LIKE '%pg_sleep(2)%' AND pid <> pg_backend_pid()`
          if (left[0]?.n === 0) break
          yield* Effect.sleep(200)
        }
        expect(left).toEqual([{ n: 0 }])
        expect(yield* unbounded<{ n: number }>`SELECT count(*)::int AS n FROM appended`).toEqual([{ n: 0 }])
      }))
  }, 30_000)

  it("the unbounded client over the same pool runs past the bound", async () => {
    await withClients(300, ({ unbounded }) =>
      Effect.gen(function*() {
        const rows = yield* unbounded<{ slept: string }>`SELECT pg_sleep(0.8)::text AS slept`
        expect(rows).toEqual([{ slept: "" }])
      }))
  }, 30_000)
})
