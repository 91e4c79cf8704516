/**
 * A keyed lease that changes hands because its holder's runner lease lapsed is logged at info
 * (decisions.md section 9): which lease, and from which incarnation.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Logger, ManagedRuntime, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Leases, layerPg as leasesPg } from "../../../infra/actors/Leases.ts"
import { layerPg, Runner, runnerMigrations } from "../../../infra/actors/Runner.ts"
import { runMigrations } from "../../../infra/eventlog/PgMigrations.ts"
import { toRecord } from "../../../infra/observability/Logging.ts"
import { configLayer } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable, runSql } from "../../support/Database.ts"

describe.skipIf(!postgresAvailable)("lease takeovers", () => {
  let url: string
  beforeAll(async () => {
    url = await createTestDatabase("takeover")
    await Effect.runPromise(runMigrations(runnerMigrations).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))))
  })
  afterAll(async () => {
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("logs a lease taken from an incarnation whose runner lease lapsed, with the previous holder", async () => {
    const lines: Array<{ level: string; message: string; fields: Record<string, unknown> }> = []
    const collector = Logger.layer([Logger.make((options) => void lines.push(toRecord(options)))])
    const runner = () =>
      ManagedRuntime.make(
        Layer.merge(layerPg, leasesPg).pipe(
          Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })),
          Layer.provide(configLayer({ SERVICE_LEASE_TTL_MS: "2000" })),
          Layer.provide(collector)
        )
      )
    const take = (runtime: ReturnType<typeof runner>, key: string) =>
      runtime.runPromise(Effect.gen(function*() {
        const incarnation = yield* (yield* Runner).current
        return { granted: yield* (yield* Leases).tryAcquire(incarnation, key), id: incarnation.id }
      }).pipe(Effect.provide(collector)))
    const a = runner()
    const b = runner()
    const held = await take(b, "webhook-lane/whe_1")
    expect(held.granted).toBe(true)
    expect((await take(a, "webhook-lane/whe_1")).granted).toBe(false)
    expect(lines.filter((line) => line.message === "lease taken over")).toEqual([])
    await runSql(url, `UPDATE runners SET expires_at = now() - interval '1 second' WHERE runner_id = '${held.id}'`)
    expect((await take(a, "webhook-lane/whe_1")).granted).toBe(true)
    const logged = lines.filter((line) => line.message === "lease taken over")
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ level: "info", fields: { lease: "webhook-lane/whe_1", from: held.id } })
    await a.dispose()
    await b.dispose()
  }, 30_000)
})
