/**
 * An upload does not hold other projects' webhooks back. Followers of the log take only events
 * committed before the oldest transaction open on the server (docs/operations.md, "A transaction
 * that holds webhooks back"). Outside audit: a staged file's metadata and bytes were written in
 * one transaction, open for about a second per 25 MiB upload, so three projects' worth of
 * uploads held every project's webhooks back by seconds. Bytes are now written in parts, each
 * its own short statement, and the metadata last.
 *
 * Made deterministic here: the test locks the table the bytes go to, so the upload waits in the
 * middle of its write, while another project's webhook must still arrive.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Fiber, ManagedRuntime, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StagedFiles } from "../../infra/files/StagedFiles.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import type { InProcessService } from "../support/Service.ts"
import { eventually, type Receiver } from "../support/WebhookReceiver.ts"
import { createEndpoint, keyOf, startMemoryWebhookService } from "../support/Webhooks.ts"
import { SECRET_KEY, sleep } from "./support/Files.ts"

describe.skipIf(!postgresAvailable)("an upload on Postgres", () => {
  let url = ""
  let service: InProcessService
  let receiver: Receiver
  let close: () => Promise<void> = async () => {}
  let db: ManagedRuntime.ManagedRuntime<PgClient.PgClient, unknown>

  beforeAll(async () => {
    url = await createTestDatabase("filesfeed")
    ;({ service, receiver, close } = await startMemoryWebhookService({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY, SERVICE_RATE_LIMIT_REQUEST_BURST: "100000" }))
    db = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
  })
  afterAll(async () => {
    await close()
    await db?.dispose()
    if (url !== "") await dropTestDatabase(url)
  })

  it("holds no other project's webhook back while its bytes are written", async () => {
    await createEndpoint(service, "p2", receiver.url("/other"), ["execution.succeeded"])
    // The table an upload writes its bytes to is locked for 4 s: the upload waits there. SHARE
    // mode, which blocks inserts, takes no transaction id (ACCESS EXCLUSIVE would, and would
    // hold the feed back itself).
    const held = db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) =>
      sql.withTransaction(Effect.gen(function*() {
        const [parts] = yield* sql<{ readonly exists: boolean }>`SELECT to_regclass('staged_file_parts') IS NOT NULL AS exists`
        yield* parts?.exists === true ? sql`LOCK TABLE staged_file_parts IN SHARE MODE` : sql`LOCK TABLE staged_file_blobs IN SHARE MODE`
        yield* Effect.sleep(4_000)
      }))))
    await sleep(200)
    const upload = { done: false }
    const uploading = service.fetch("/v1/files", { method: "POST", key: keyOf("p1"), json: { name: "big.bin", content: randomBytes(3_000_000).toString("base64") } })
    void uploading.finally(() => {
      upload.done = true
    })
    await sleep(300)
    const executed = await service.fetch("/v1/execute", { method: "POST", key: keyOf("p2"), json: { tool: "demo.echo", userId: "u1", input: { while: "uploading" } } })
    expect(executed.status).toBe(200)
    await eventually(() => (receiver.received.some((request) => request.path === "/other") ? true : undefined), 3_500, "the other project's webhook")
    expect(upload.done).toBe(false)
    await held
    const uploaded = await uploading
    expect(uploaded.status).toBe(201)
    const { fileId } = (await uploaded.json()) as { fileId: string }
    expect((await service.fetch(`/v1/files/${fileId}`, { key: keyOf("p1") })).status).toBe(200)
  }, 30_000)

  // Re-audit: a client gone mid-upload (its request interrupted) left the parts written so far
  // (12 MiB in one run), outside the project's storage limit until the hourly sweep.
  it("leaves no part without its file when the upload is interrupted mid-write", async () => {
    const orphans = async () =>
      Number((await db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql<{ readonly n: string }>`
        SELECT count(*) AS n FROM staged_file_parts p WHERE NOT EXISTS (SELECT 1 FROM staged_files f WHERE f.file_id = p.file_id)`)))[0]?.n)
    expect(await orphans()).toBe(0)
    // The parts table takes no insert for 2 s: the upload waits in its first part's statement,
    // and is interrupted there, as a request is when its client goes away.
    const held = db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) =>
      sql.withTransaction(Effect.andThen(sql`LOCK TABLE staged_file_parts IN SHARE MODE`, Effect.sleep(2_000)))))
    await sleep(200)
    const upload = service.runtime.runFork(Effect.flatMap(StagedFiles, (files) =>
      files.stage({ projectId: "proj_p3", name: "gone.bin", content: randomBytes(3_000_000).toString("base64") })))
    await sleep(1_000)
    await service.runtime.runPromise(Fiber.interrupt(upload))
    await held
    await sleep(500)
    // Either the upload became a file (its last statement runs whole) or its parts went with it.
    expect(await orphans()).toBe(0)
  }, 30_000)
})
