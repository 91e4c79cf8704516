/**
 * A slow upload is not a hung store. Staged file bytes can take seconds to write (16 uploads of
 * 25 MiB at once, in the outside audit), and were written through the pool every feature shares,
 * under its statement bound (SERVICE_STORE_TIMEOUT_MS): one write past the bound took the whole
 * store for hung, every request of every project was answered 503 at once, and the runner lease
 * that keeps executions and webhook lanes alive went with it. Blob writes and reads now go
 * through a small pool of their own with a longer bound, so they wait for the database without
 * holding the shared pool's connections or tripping its bound.
 *
 * Made deterministic here: the test holds a lock on the blob table for three times the bound,
 * so an upload waits that long, while other requests must be answered as usual.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { type InProcessService, startService } from "../support/Service.ts"
import { FAST, SECRET_KEY, sleep } from "./support/Files.ts"

const BOUND_MS = 1_000

describe.skipIf(!postgresAvailable)("a slow staged-file write on Postgres", () => {
  let url: string
  let service: InProcessService
  let db: ManagedRuntime.ManagedRuntime<PgClient.PgClient, unknown>

  beforeAll(async () => {
    url = await createTestDatabase("slowblobs")
    service = await startService({ ...FAST, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY, SERVICE_STORE_TIMEOUT_MS: String(BOUND_MS) })
    db = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  })
  afterAll(async () => {
    await service?.close()
    await db?.dispose()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("waits for the database without taking the store for hung: other requests go on, and the upload lands", async () => {
    // The parts table is locked for 3 bounds; an INSERT into it waits until the lock goes.
    const held = db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) =>
      sql.withTransaction(Effect.andThen(
        sql`LOCK TABLE staged_file_parts IN ACCESS EXCLUSIVE MODE`,
        Effect.sleep(3 * BOUND_MS)
      ))))
    await sleep(200)
    const uploading = service.fetch("/v1/files", { method: "POST", json: { name: "slow.bin", content: randomBytes(64_000).toString("base64") } })

    // Meanwhile, before and past the bound, requests that need the store are answered as usual.
    const statuses: Array<number> = []
    const upload = { done: false }
    void uploading.finally(() => {
      upload.done = true
    })
    for (let i = 0; !upload.done && i < 200; i++) {
      statuses.push((await service.fetch("/v1/executions?limit=1")).status)
      if (i % 10 === 0) statuses.push((await service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echo", userId: "u1", input: { i } } })).status)
      await sleep(25)
    }
    expect(statuses.length).toBeGreaterThan(20)
    expect(statuses.filter((status) => status !== 200)).toEqual([])
    const ready = await service.fetch("/readyz", { key: null })
    expect(ready.status).toBe(200)

    await held
    const uploaded = await uploading
    expect(uploaded.status).toBe(201)
    const { fileId } = (await uploaded.json()) as { fileId: string }
    expect((await service.fetch(`/v1/files/${fileId}`)).status).toBe(200)
  })
})
