/**
 * Staged files on Postgres across restarts: metadata and bytes persist, bytes stay out of the
 * event log, start-up cleanup reclaims every expired row (metadata and blob together), and
 * sweeps never overlap across processes (the advisory lock).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Exit, ManagedRuntime, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PART_BYTES, SWEEP_LOCK } from "../../infra/files/PgStagedFiles.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../support/Database.ts"
import { freePort } from "../support/Ports.ts"
import { type InProcessService, startProcess, startService } from "../support/Service.ts"
import { FAST, SECRET_KEY, sleep, upload, withFiles } from "./support/Files.ts"

const connect = (url: string) => ManagedRuntime.make(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
type Db = ReturnType<typeof connect>

const query = <A extends object>(db: Db, text: string) =>
  db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe<A>(text)))

const counts = async (db: Db) => {
  const [row] = await query<{ files: bigint; parts: bigint; events: bigint }>(db,
    `SELECT (SELECT count(*) FROM staged_files) AS files, (SELECT count(DISTINCT file_id) FROM staged_file_parts) AS parts,
            (SELECT count(*) FROM events) AS events`)
  return { files: Number(row?.files), parts: Number(row?.parts), events: Number(row?.events) }
}

describe.skipIf(!postgresAvailable)("staged files on Postgres", () => {
  let url: string
  let db: Db
  const start = (env: Record<string, string> = {}) =>
    startService({ ...FAST, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY, ...env })

  beforeAll(async () => {
    url = await createTestDatabase("filesdur")
  })
  afterAll(async () => {
    await db?.dispose()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("keeps metadata and bytes across a restart, and no bytes in the event log", async () => {
    // Two and a half parts (PgStagedFiles.ts writes bytes in parts of 1 MiB).
    const bytes = randomBytes(Math.floor(2.5 * PART_BYTES))
    let first: InProcessService | undefined = await start()
    const staged = await upload(first, { name: "data.bin", content: bytes.toString("base64"), mimeType: "application/x-test" })
    await first.close()
    first = undefined
    db = connect(url)
    const stored = await counts(db)
    expect(stored).toEqual({ files: 1, parts: 1, events: 0 })
    const [blob] = await query<{ size: number; parts: number }>(db, `SELECT sum(octet_length(bytes)) AS size, count(*) AS parts FROM staged_file_parts`)
    expect(Number(blob?.size)).toBe(bytes.length)
    expect(Number(blob?.parts)).toBe(3)

    const second = await start()
    try {
      const response = await second.fetch(`/v1/files/${staged.fileId}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual(staged)
      const listed = (await (await second.fetch("/v1/files")).json()) as { files: Array<{ fileId: string }> }
      expect(listed.files.map((f) => f.fileId)).toEqual([staged.fileId])
      const read = await withFiles(second, (files) =>
        Effect.exit(files.forExecution({ projectId: "proj_test", executionId: "exe_1", attachments: [staged.fileId] }).read(staged.fileId)))
      expect(Exit.isSuccess(read) && Buffer.from(read.value.bytes).equals(bytes)).toBe(true)
    } finally {
      await second.close()
    }
  })

  it("an acknowledged upload survives a kill -9 of the process", async () => {
    const env = { ...FAST, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY }
    // Ports the OS hands out, one per process: a port picked at random may be taken, and a dead
    // process's port may be taken by a client socket before the restart binds it.
    const first = await startProcess(env, await freePort())
    let staged: { fileId: string }
    try {
      const response = await first.fetch("/v1/files", { method: "POST", json: { name: "crash.bin", content: "AAECAw==" } })
      expect(response.status).toBe(201)
      staged = (await response.json()) as { fileId: string }
    } finally {
      await first.kill9()
    }
    const second = await startProcess(env, await freePort())
    try {
      const response = await second.fetch(`/v1/files/${staged.fileId}`)
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ fileId: staged.fileId, name: "crash.bin", size: 4 })
    } finally {
      await second.stop()
    }
  }, 60_000)

  it("a sweep takes at most 100 rows, and none while another process holds the sweep lock", async () => {
    const service = await start({ SERVICE_FILE_TTL_MS: "50" })
    const holder = connect(url)
    try {
      for (let i = 0; i < 150; i++) await upload(service, { name: `f${i}`, content: "AAAA" })
      await sleep(100)
      expect((await counts(db)).files).toBeGreaterThanOrEqual(150)
      await holder.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql`SELECT pg_advisory_lock(${SWEEP_LOCK})`))
      expect(await withFiles(service, (files) => files.sweep(100))).toEqual({ ran: false, deleted: 0 })
      await holder.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql`SELECT pg_advisory_unlock(${SWEEP_LOCK})`))
      const before = (await counts(db)).files
      expect(await withFiles(service, (files) => files.sweep(100))).toEqual({ ran: true, deleted: 100 })
      const after = await counts(db)
      expect(after.files).toBe(before - 100)
      expect(after.parts).toBe(after.files)
    } finally {
      await holder.dispose()
      await service.close()
    }
  })

  it("start-up reclaims every expired file in batches, metadata and blobs together", async () => {
    // Each start-up drains what has expired so far: stage the long-lived file first.
    const live = await start()
    const kept = await upload(live, { name: "kept", content: "AAAA" })
    await live.close()
    const writer = await start({ SERVICE_FILE_TTL_MS: "200" })
    for (let i = 0; i < 230; i++) await upload(writer, { name: `g${i}`, content: "AAAA" })
    await writer.close()
    await sleep(250)
    expect((await counts(db)).files).toBeGreaterThan(230)

    const restarted = await start()
    try {
      const expired = async () => {
        const [row] = await query<{ n: bigint }>(db,
          `SELECT count(*) AS n FROM staged_files WHERE expires_ms <= (extract(epoch FROM clock_timestamp()) * 1000)::bigint`)
        return Number(row?.n)
      }
      let left = await expired()
      for (let i = 0; i < 100 && left > 0; i++) {
        await sleep(50)
        left = await expired()
      }
      expect(left).toBe(0)
      const remaining = await counts(db)
      expect(remaining.parts).toBe(remaining.files)
      expect(remaining.events).toBe(0)
      expect((await restarted.fetch(`/v1/files/${kept.fileId}`)).status).toBe(200)
    } finally {
      await restarted.close()
    }
  })

  // Bytes moved to parts (2026-11-29): a file staged before keeps its one blob until it expires.
  it("reads a file staged before parts existed from its blob, and sweeps parts an interrupted upload left", async () => {
    const service = await start()
    try {
      const now = Date.now()
      // A file as staged before: its parts taken away, its bytes put in one blob.
      const legacy = randomBytes(5 * 1024 * 1024 + 7)
      const staged = await upload(service, { name: "old.bin", content: legacy.toString("base64") })
      await db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => Effect.andThen(
        sql`DELETE FROM staged_file_parts WHERE file_id = ${staged.fileId}`,
        sql`INSERT INTO staged_file_blobs (file_id, bytes) VALUES (${staged.fileId}, ${legacy})`
      )))
      const read = await withFiles(service, (files) =>
        Effect.exit(files.forExecution({ projectId: "proj_test", executionId: "exe_1", attachments: [staged.fileId] }).read(staged.fileId)))
      expect(Exit.isSuccess(read) && Buffer.from(read.value.bytes).equals(legacy)).toBe(true)
      // Parts with no metadata row: an hour old, an upload that died; fresh, one in progress.
      await db.runPromise(Effect.flatMap(PgClient.PgClient, (sql) => sql`INSERT INTO staged_file_parts (file_id, part, created_ms, bytes)
        VALUES ('file_orphan', 0, ${now - 3_700_000}, '\\x00'), ('file_orphan', 1, ${now - 3_700_000}, '\\x00'), ('file_uploading', 0, ${now}, '\\x00')`))
      expect(await withFiles(service, (files) => files.sweep(100))).toMatchObject({ ran: true })
      const left = await query<{ file_id: string }>(db, `SELECT DISTINCT file_id FROM staged_file_parts WHERE file_id IN ('file_orphan', 'file_uploading')`)
      expect(left.map((row) => row.file_id)).toEqual(["file_uploading"])
    } finally {
      await service.close()
    }
  })
})
