/**
 * Staged files on Postgres: metadata in `staged_files`, bytes in `staged_file_blobs`.
 *
 * Why plain tables and not an event stream with a projection: a staged file is short-lived
 * data whose whole history is "uploaded, then reclaimed"; no actor folds it and nothing replays
 * it. The event log is append-only forever, so logging each upload and reclaim would keep a
 * permanent record of ephemeral files, and the bytes must sit in a blob table anyway. With
 * plain tables the metadata row and its blob are written in one transaction and removed by one
 * DELETE (the blob row cascades), so the view and the blobs can never disagree; an event-sourced
 * view would need the group-committed append and the blob insert in one transaction, which
 * the event store does not offer.
 *
 * Writing and reading bytes go through the blob client (Database.ts): a pool of their own with a
 * longer bound, so a slow upload neither holds the shared pool's connections nor, past the shared
 * bound, takes the whole store for hung. Metadata alone is read on the shared client.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { StagedFileRecord } from "../../domain/files/Files.ts"
import { Database } from "../eventlog/Database.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { type FileBackend, layerFrom } from "./StagedFiles.ts"

export const fileMigrations: ReadonlyArray<Migration> = [
  {
    id: 100,
    name: "staged_files",
    statements: [
      `CREATE TABLE staged_files (
        file_id text COLLATE "C" PRIMARY KEY,
        project_id text NOT NULL,
        name text NOT NULL,
        mime_type text NOT NULL,
        size bigint NOT NULL,
        created_ms bigint NOT NULL,
        expires_ms bigint NOT NULL
      )`,
      // Lists walk a project's ids newest first; the sweeper takes the oldest expiries.
      `CREATE INDEX staged_files_project ON staged_files (project_id, file_id DESC)`,
      `CREATE INDEX staged_files_expiry ON staged_files (expires_ms)`,
      `CREATE TABLE staged_file_blobs (
        file_id text COLLATE "C" PRIMARY KEY REFERENCES staged_files (file_id) ON DELETE CASCADE,
        bytes bytea NOT NULL
      )`,
      // Uploads are mostly compressed formats already: store out of line without trying to compress.
      `ALTER TABLE staged_file_blobs ALTER COLUMN bytes SET STORAGE EXTERNAL`
    ]
  }
]

/** Bytes per read of a blob; well under the driver's 16 MiB message limit. */
const BLOB_PART = 4 * 1024 * 1024

/** Held for the duration of one sweep transaction, so sweeps never overlap across processes. */
export const SWEEP_LOCK = 7_100_100

interface FileRow {
  readonly file_id: string
  readonly project_id: string
  readonly name: string
  readonly mime_type: string
  readonly size: bigint | number
  readonly created_ms: bigint | number
  readonly expires_ms: bigint | number
}

const toRecord = (row: FileRow): StagedFileRecord => ({
  fileId: row.file_id,
  projectId: row.project_id,
  name: row.name,
  mimeType: row.mime_type,
  size: Number(row.size),
  createdMs: Number(row.created_ms),
  expiresMs: Number(row.expires_ms)
})

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

export const makePgBackend = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const storage = yield* Database
  // Memory storage never reaches this backend; the shared client stands in for the type's sake.
  const blobs = storage._tag === "Postgres" ? storage.blobs : sql
  const backend: FileBackend = {
    insert: Effect.fnUntraced(function*(record, bytes) {
      yield* blobs`INSERT INTO staged_files (file_id, project_id, name, mime_type, size, created_ms, expires_ms)
        VALUES (${record.fileId}, ${record.projectId}, ${record.name}, ${record.mimeType}, ${record.size},
                ${record.createdMs}, ${record.expiresMs})`
      yield* blobs`INSERT INTO staged_file_blobs (file_id, bytes) VALUES (${record.fileId}, ${bytes})`
    }, (effect) => blobs.withTransaction(effect), Effect.mapError(unavailable)),
    find: (fileId) =>
      sql<FileRow>`SELECT * FROM staged_files WHERE file_id = ${fileId}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? undefined : toRecord(rows[0]))),
        Effect.mapError(unavailable)
      ),
    findMany: (fileIds) =>
      sql<FileRow>`SELECT * FROM staged_files WHERE file_id = ANY(${fileIds}::text[])`.pipe(
        Effect.map((rows) => rows.map(toRecord)),
        Effect.mapError(unavailable)
      ),
    // Bytes come back in parts: the driver refuses a server message over 16 MiB, and a
    // file may be 25 MiB or more. EXTERNAL storage lets substring read only the part's chunks.
    content: Effect.fnUntraced(function*(fileId) {
      const rows = yield* sql<FileRow>`SELECT * FROM staged_files WHERE file_id = ${fileId}`
      if (rows[0] === undefined) return undefined
      const record = toRecord(rows[0])
      const bytes = new Uint8Array(record.size)
      for (let offset = 0; offset === 0 || offset < record.size; offset += BLOB_PART) {
        const parts = yield* blobs<{ readonly part: Uint8Array }>`
          SELECT substring(bytes FROM ${offset + 1} FOR ${BLOB_PART}) AS part FROM staged_file_blobs WHERE file_id = ${fileId}`
        const part = parts[0]?.part
        // Reclaimed while being read: as if it were already gone.
        if (part === undefined) return undefined
        bytes.set(part, offset)
      }
      return { record, bytes }
    }, Effect.mapError(unavailable)),
    remove: (fileId) =>
      sql`DELETE FROM staged_files WHERE file_id = ${fileId}`.pipe(Effect.asVoid, Effect.mapError(unavailable)),
    page: (projectId, nowMs, after, limit) =>
      (after === undefined
        ? sql<FileRow>`SELECT * FROM staged_files WHERE project_id = ${projectId} AND expires_ms > ${nowMs}
            ORDER BY file_id DESC LIMIT ${limit}`
        : sql<FileRow>`SELECT * FROM staged_files WHERE project_id = ${projectId} AND expires_ms > ${nowMs}
            AND file_id < ${after} ORDER BY file_id DESC LIMIT ${limit}`).pipe(
          Effect.map((rows) => rows.map(toRecord)),
          Effect.mapError(unavailable)
        ),
    usage: (projectId, nowMs) =>
      sql<{ readonly bytes: string | number | null; readonly first: string | number | null }>`
        SELECT sum(size) AS bytes, min(expires_ms) AS first FROM staged_files
        WHERE project_id = ${projectId} AND expires_ms > ${nowMs}`.pipe(
        Effect.map((rows) => ({
          bytes: Number(rows[0]?.bytes ?? 0),
          firstExpiryMs: rows[0]?.first === null || rows[0]?.first === undefined ? undefined : Number(rows[0].first)
        })),
        Effect.mapError(unavailable)
      ),
    sweep: Effect.fnUntraced(function*(nowMs, limit) {
      const [lock] = yield* sql<{ readonly locked: boolean }>`SELECT pg_try_advisory_xact_lock(${SWEEP_LOCK}) AS locked`
      if (lock?.locked !== true) return { ran: false, deleted: 0 }
      const deleted = yield* sql<{ readonly file_id: string }>`
        DELETE FROM staged_files WHERE file_id IN (
          SELECT file_id FROM staged_files WHERE expires_ms <= ${nowMs} ORDER BY expires_ms LIMIT ${limit}
        ) RETURNING file_id`
      return { ran: true, deleted: deleted.length }
    }, (effect) => sql.withTransaction(effect), Effect.mapError(unavailable))
  }
  return backend
})

export const layerPg = layerFrom(makePgBackend)
