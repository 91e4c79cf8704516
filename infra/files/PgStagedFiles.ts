/**
 * Staged files on Postgres: metadata in `staged_files`, bytes in `staged_file_parts` (1 MiB
 * each; files staged before 2026-11-29 keep theirs in `staged_file_blobs`).
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
 * Why parts, each its own statement, and the metadata row last: the log's followers take only
 * events committed before the oldest transaction open on the server (docs/operations.md), so one
 * transaction writing 25 MiB held every project's webhooks back for about a second (outside
 * audit: three uploads at once delayed another project's webhooks by 2.5-4 s). A part's statement
 * is short; the metadata row, written once every part is there, makes the file exist, so a list
 * never shows a file whose bytes are missing. Parts an interrupted upload left without their
 * metadata are removed by the sweep once they are an hour old.
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
  },
  {
    id: 101,
    name: "staged_file_parts",
    statements: [
      // No foreign key: the parts are written before the metadata row that makes the file exist.
      `CREATE TABLE staged_file_parts (
        file_id text COLLATE "C" NOT NULL,
        part integer NOT NULL,
        created_ms bigint NOT NULL,
        bytes bytea NOT NULL,
        PRIMARY KEY (file_id, part)
      )`,
      `ALTER TABLE staged_file_parts ALTER COLUMN bytes SET STORAGE EXTERNAL`,
      `CREATE INDEX staged_file_parts_created ON staged_file_parts (created_ms)`
    ]
  }
]

/** Bytes per part of a file: each is written by a statement of its own (a few milliseconds). */
export const PART_BYTES = 1024 * 1024

/** Parts without their metadata row this old are an interrupted upload's, and are removed. */
const ORPHAN_PARTS_MS = 60 * 60 * 1000

/** Bytes per read of a legacy blob, and parts per read: well under the driver's 16 MiB message limit. */
const BLOB_PART = 4 * 1024 * 1024
const PARTS_PER_READ = BLOB_PART / PART_BYTES

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
  /**
   * The bytes of a file staged before parts existed (one `staged_file_blobs` row), read a piece
   * at a time: EXTERNAL storage lets substring read only the piece's chunks.
   */
  const legacyContent = Effect.fnUntraced(function*(record: StagedFileRecord) {
    const bytes = new Uint8Array(record.size)
    for (let offset = 0; offset === 0 || offset < record.size; offset += BLOB_PART) {
      const parts = yield* blobs<{ readonly part: Uint8Array }>`
        SELECT substring(bytes FROM ${offset + 1} FOR ${BLOB_PART}) AS part FROM staged_file_blobs WHERE file_id = ${record.fileId}`
      const part = parts[0]?.part
      // Reclaimed while being read: as if it were already gone.
      if (part === undefined) return undefined
      bytes.set(part, offset)
    }
    return { record, bytes }
  })
  const backend: FileBackend = {
    insert: Effect.fnUntraced(function*(record, bytes) {
      // Each statement runs whole: a client going away mid-write interrupts the request between
      // two statements, never inside one, so nothing it sent commits after the clean-up below.
      for (let part = 0; part * PART_BYTES < bytes.length; part++) {
        const slice = bytes.subarray(part * PART_BYTES, (part + 1) * PART_BYTES)
        yield* Effect.uninterruptible(
          blobs`INSERT INTO staged_file_parts (file_id, part, created_ms, bytes) VALUES (${record.fileId}, ${part}, ${record.createdMs}, ${slice})`
        )
      }
      yield* Effect.uninterruptible(blobs`INSERT INTO staged_files (file_id, project_id, name, mime_type, size, created_ms, expires_ms)
        VALUES (${record.fileId}, ${record.projectId}, ${record.name}, ${record.mimeType}, ${record.size},
                ${record.createdMs}, ${record.expiresMs})`)
    }, (effect, record) =>
      // An upload that fails, or whose client goes away mid-write, takes its parts back unless
      // its metadata row made it a file; the sweep removes what a killed process could not.
      Effect.onExit(effect, (exit) =>
        exit._tag === "Success" ? Effect.void : Effect.ignore(blobs`DELETE FROM staged_file_parts WHERE file_id = ${record.fileId}
          AND NOT EXISTS (SELECT 1 FROM staged_files WHERE file_id = ${record.fileId})`)),
      Effect.mapError(unavailable)),
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
    // Bytes come back a few parts per query: the driver refuses a server message over 16 MiB,
    // and a file may be 25 MiB or more.
    content: Effect.fnUntraced(function*(fileId) {
      const rows = yield* sql<FileRow>`SELECT * FROM staged_files WHERE file_id = ${fileId}`
      if (rows[0] === undefined) return undefined
      const record = toRecord(rows[0])
      const bytes = new Uint8Array(record.size)
      const count = Math.ceil(record.size / PART_BYTES)
      for (let from = 0; from < count; from += PARTS_PER_READ) {
        const parts = yield* blobs<{ readonly part: number; readonly bytes: Uint8Array }>`
          SELECT part, bytes FROM staged_file_parts WHERE file_id = ${fileId} AND part >= ${from} AND part < ${from + PARTS_PER_READ}
          ORDER BY part`
        // Staged before parts existed: its bytes are one blob.
        if (from === 0 && parts.length === 0) return yield* legacyContent(record)
        // Reclaimed while being read: as if it were already gone.
        if (parts.length !== Math.min(PARTS_PER_READ, count - from)) return undefined
        for (const part of parts) bytes.set(part.bytes, part.part * PART_BYTES)
      }
      return { record, bytes }
    }, Effect.mapError(unavailable)),
    remove: (fileId) =>
      Effect.andThen(sql`DELETE FROM staged_files WHERE file_id = ${fileId}`, sql`DELETE FROM staged_file_parts WHERE file_id = ${fileId}`).pipe(
        sql.withTransaction,
        Effect.asVoid,
        Effect.mapError(unavailable)
      ),
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
      if (deleted.length > 0) yield* sql`DELETE FROM staged_file_parts WHERE file_id = ANY(${deleted.map((row) => row.file_id)}::text[])`
      // An interrupted upload's parts (no metadata row came), a batch at a time like the rest.
      yield* sql`DELETE FROM staged_file_parts WHERE (file_id, part) IN (
          SELECT p.file_id, p.part FROM staged_file_parts p
          WHERE p.created_ms <= ${nowMs - ORPHAN_PARTS_MS} AND NOT EXISTS (SELECT 1 FROM staged_files f WHERE f.file_id = p.file_id)
          LIMIT ${limit}
        )`
      return { ran: true, deleted: deleted.length }
    }, (effect) => sql.withTransaction(effect), Effect.mapError(unavailable))
  }
  return backend
})

export const layerPg = layerFrom(makePgBackend)
