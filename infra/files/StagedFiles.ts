/**
 * Staged files: the store behind `/v1/files` and the only way to read their bytes. The rules
 * (canonical base64, size cap, TTL, project scoping, expiry on every read, the anchor rule of
 * list cursors) live here once, over a small backend that each store implements: a map in
 * this process (below) or Postgres tables (PgStagedFiles.ts).
 *
 * Bytes leave this module only through `forExecution`, which answers for the files attached
 * to one execution of one project; no public route can reach them.
 */
import { Clock, Context, Effect, Layer, Schema, Semaphore } from "effect"
import { base64FailureMessage, decodeCanonicalBase64, decodedLength } from "../../domain/files/Base64.ts"
import { InvalidInput, NotFound, RateLimited } from "../../domain/Errors.ts"
import { DEFAULT_MIME_TYPE, FILE_NOT_FOUND_MESSAGE, isExpired, type StagedFileRecord } from "../../domain/files/Files.ts"
import { FileId } from "../../domain/Ids.ts"
import { integer } from "../Settings.ts"
import type { StoreUnavailable } from "../eventlog/EventStore.ts"
import { newId } from "../Ids.ts"
import type { ExecutionFiles, StagedFileContent } from "../providers/Adapter.ts"

export interface SweepResult {
  /** False when another sweeper (in this or another process) holds the sweep lock. */
  readonly ran: boolean
  readonly deleted: number
}

/** What a store must do; every rule above it is shared. */
export interface FileBackend {
  readonly insert: (record: StagedFileRecord, bytes: Uint8Array) => Effect.Effect<void, StoreUnavailable>
  readonly find: (fileId: string) => Effect.Effect<StagedFileRecord | undefined, StoreUnavailable>
  readonly findMany: (fileIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StagedFileRecord>, StoreUnavailable>
  readonly content: (
    fileId: string
  ) => Effect.Effect<{ readonly record: StagedFileRecord; readonly bytes: Uint8Array } | undefined, StoreUnavailable>
  /** Removes the metadata and the bytes together. */
  readonly remove: (fileId: string) => Effect.Effect<void, StoreUnavailable>
  /** Unexpired files of a project, newest first (file id descending), strictly after `after`. */
  readonly page: (
    projectId: string,
    nowMs: number,
    after: string | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<StagedFileRecord>, StoreUnavailable>
  /** Deletes up to `limit` expired files, never concurrently with another sweep. */
  readonly sweep: (nowMs: number, limit: number) => Effect.Effect<SweepResult, StoreUnavailable>
  /** The bytes of a project's unexpired files, and when the first of them expires. */
  readonly usage: (projectId: string, nowMs: number) => Effect.Effect<ProjectUsage, StoreUnavailable>
}

export interface ProjectUsage {
  readonly bytes: number
  /** Undefined when the project holds no live file. */
  readonly firstExpiryMs: number | undefined
}

export interface StageInput {
  readonly projectId: string
  readonly name: string
  readonly content: string
  readonly mimeType?: string | undefined
}

export interface ExecutionBinding {
  readonly projectId: string
  readonly executionId: string
  readonly attachments: ReadonlyArray<string>
}

export interface StagedFilesShape {
  /**
   * Validates and stores an upload; the content is canonical padded base64. RateLimited when the
   * project's live files would hold more than SERVICE_FILE_PROJECT_MAX_BYTES.
   */
  readonly stage: (input: StageInput) => Effect.Effect<StagedFileRecord, InvalidInput | RateLimited | StoreUnavailable>
  /** A live file of the project; any other id (malformed, missing, expired, foreign) is the same NotFound. */
  readonly get: (projectId: string, fileId: string) => Effect.Effect<StagedFileRecord, NotFound | StoreUnavailable>
  /**
   * One page of the project's live files, newest first. `after` is the previous page's last id;
   * it must still exist in this project (its TTL may have passed), else InvalidInput.
   */
  readonly list: (
    projectId: string,
    page: { readonly limit: number; readonly after?: string | undefined }
  ) => Effect.Effect<{ readonly files: ReadonlyArray<StagedFileRecord>; readonly more: boolean }, InvalidInput | StoreUnavailable>
  /** Of `fileIds`, those that are missing, expired or not the project's (the execute route refuses them). */
  readonly existing: (projectId: string, fileIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, StoreUnavailable>
  /** The bytes reader handed to the adapters of one execution. */
  readonly forExecution: (binding: ExecutionBinding) => ExecutionFiles
  /** One cleanup batch of at most `limit` expired files. */
  readonly sweep: (limit: number) => Effect.Effect<SweepResult, StoreUnavailable>
}

export class StagedFiles extends Context.Service<StagedFiles, StagedFilesShape>()("app/infra/StagedFiles") {}

const isFileId = Schema.is(FileId)
const notFound = () => new NotFound({ message: FILE_NOT_FOUND_MESSAGE })

export const makeStagedFiles = (
  backend: FileBackend,
  limits: { readonly maxBytes: number; readonly ttlMs: number; readonly projectMaxBytes: number }
): StagedFilesShape => {
  /** The project's live record for `fileId`; an expired one is deleted on the way (spec: reading it deletes it). */
  const live = Effect.fnUntraced(function*(projectId: string, fileId: string) {
    if (!isFileId(fileId)) return undefined
    const record = yield* backend.find(fileId)
    if (record === undefined || record.projectId !== projectId) return undefined
    if (isExpired(record, yield* Clock.currentTimeMillis)) {
      yield* backend.remove(fileId)
      return undefined
    }
    return record
  })

  /**
   * A project's share of the store (memory, or the database's disk) is its live files' bytes. An
   * upload reserves its size when it is admitted and holds it until its insert has committed, so
   * uploads arriving together see each other. Admission (the project's total read, checked, and
   * the reservation made) and a release take the project's lock: a release cannot slip between
   * another upload's read of the total and its check, which would leave a just-committed file in
   * neither (in this process; with several processes, each one's uploads in flight count in its
   * own reservations only).
   */
  const reserved = new Map<string, number>()
  const locks = new Map<string, Semaphore.Semaphore>()
  const lockOf = (projectId: string) => {
    let lock = locks.get(projectId)
    if (lock === undefined) {
      lock = Semaphore.makeUnsafe(1)
      locks.set(projectId, lock)
    }
    return lock
  }
  const admit = (projectId: string, size: number) =>
    lockOf(projectId).withPermits(1)(Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const usage = yield* backend.usage(projectId, now)
      // A file committed but not yet released counts twice for a moment: a refusal that errs safe.
      const held = usage.bytes + (reserved.get(projectId) ?? 0)
      if (held + size > limits.projectMaxBytes) {
        const retryAfter = Math.max(1, Math.ceil(((usage.firstExpiryMs ?? now) - now) / 1000))
        return yield* new RateLimited({
          message: `The project's staged files hold ${held} bytes, and this one would take them past the limit of ` +
            `${limits.projectMaxBytes} (SERVICE_FILE_PROJECT_MAX_BYTES); space comes back as files expire.`,
          retryAfter
        })
      }
      reserved.set(projectId, (reserved.get(projectId) ?? 0) + size)
      return now
    }))
  const release = (projectId: string, size: number) =>
    lockOf(projectId).withPermits(1)(Effect.sync(() => {
      const left = (reserved.get(projectId) ?? 0) - size
      if (left > 0) reserved.set(projectId, left)
      else reserved.delete(projectId)
    }))

  const stage = Effect.fn("StagedFiles.stage")(function*(input: StageInput) {
    // The size is known from the length: refuse oversize content before decoding it.
    if (input.content.length % 4 !== 0) return yield* new InvalidInput({ message: base64FailureMessage.length })
    const size = decodedLength(input.content)
    if (size > limits.maxBytes) {
      return yield* new InvalidInput({ message: `The decoded file is ${size} bytes; the limit is ${limits.maxBytes}.` })
    }
    const decoded = decodeCanonicalBase64(input.content)
    if (decoded._tag === "invalid") return yield* new InvalidInput({ message: base64FailureMessage[decoded.reason] })
    // `size` is the decoded bytes' length: the decoder checked it.
    return yield* Effect.acquireUseRelease(admit(input.projectId, size), (now) =>
      Effect.gen(function*() {
        const record: StagedFileRecord = {
          fileId: newId("file"),
          projectId: input.projectId,
          name: input.name,
          mimeType: input.mimeType ?? DEFAULT_MIME_TYPE,
          size,
          createdMs: now,
          expiresMs: now + limits.ttlMs
        }
        yield* backend.insert(record, decoded.bytes)
        return record
      }), () => release(input.projectId, size))
  })

  const get = Effect.fn("StagedFiles.get")(function*(projectId: string, fileId: string) {
    const record = yield* live(projectId, fileId)
    if (record === undefined) return yield* notFound()
    return record
  })

  const list = Effect.fn("StagedFiles.list")(function*(
    projectId: string,
    page: { readonly limit: number; readonly after?: string | undefined }
  ) {
    if (page.after !== undefined) {
      const anchor = isFileId(page.after) ? yield* backend.find(page.after) : undefined
      if (anchor === undefined || anchor.projectId !== projectId) {
        return yield* new InvalidInput({ message: "The cursor's position no longer exists; restart the listing without a cursor." })
      }
    }
    const now = yield* Clock.currentTimeMillis
    const rows = yield* backend.page(projectId, now, page.after, page.limit + 1)
    return { files: rows.slice(0, page.limit), more: rows.length > page.limit }
  })

  const existing = Effect.fnUntraced(function*(projectId: string, fileIds: ReadonlyArray<string>) {
    const wanted = [...new Set(fileIds)]
    const valid = wanted.filter(isFileId)
    const found = valid.length === 0 ? [] : yield* backend.findMany(valid)
    const now = yield* Clock.currentTimeMillis
    const alive = new Set(found.filter((r) => r.projectId === projectId && !isExpired(r, now)).map((r) => r.fileId))
    return wanted.filter((id) => !alive.has(id))
  })

  const read = Effect.fnUntraced(function*(binding: ExecutionBinding, fileId: string): Effect.fn.Return<StagedFileContent, NotFound | StoreUnavailable> {
    if (!binding.attachments.includes(fileId) || !isFileId(fileId)) {
      return yield* new NotFound({ message: `File ${fileId} is not attached to this execution.` })
    }
    const found = yield* backend.content(fileId)
    const now = yield* Clock.currentTimeMillis
    // Attached, and live when the execution was requested: a queued execution can outlive it.
    if (found === undefined || found.record.projectId !== binding.projectId || isExpired(found.record, now)) {
      return yield* new NotFound({ message: `File ${fileId} expired before the execution read it.` })
    }
    const { record, bytes } = found
    return { fileId: record.fileId, name: record.name, mimeType: record.mimeType, bytes }
  }, (effect, binding) =>
    effect.pipe(
      // A store fault is not "this file does not exist": it ends the adapter call as a defect,
      // which the execution records as a failure instead of a misleading not_found.
      Effect.catchTag("StoreUnavailable", (error) => Effect.die(error)),
      Effect.withSpan("StagedFiles.read", { attributes: { executionId: binding.executionId } })
    ))

  return {
    stage,
    get,
    list,
    existing,
    forExecution: (binding) => {
      const frozen: ExecutionBinding = { ...binding, attachments: [...binding.attachments] }
      return { read: (fileId) => read(frozen, fileId) }
    },
    sweep: (limit) => Effect.flatMap(Clock.currentTimeMillis, (now) => backend.sweep(now, limit))
  }
}

/**
 * The two calls the executions feature makes (its `AttachmentFiles` port): which attachments
 * are not live files of the project, and the execution-bound reader. A store fault there is a
 * defect, not a "missing file". Wire it as `Layer.effect(AttachmentFiles, Effect.map(StagedFiles, attachmentPort))`.
 */
export const attachmentPort = (files: StagedFilesShape) => ({
  missing: (projectId: string, fileIds: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>> =>
    Effect.orDie(files.existing(projectId, fileIds)),
  forExecution: files.forExecution
})

/** The backend without a database: one map in this process, lost on restart. */
export const makeMemoryBackend = (): FileBackend => {
  const files = new Map<string, { readonly record: StagedFileRecord; readonly bytes: Uint8Array }>()
  return {
    insert: (record, bytes) => Effect.sync(() => void files.set(record.fileId, { record, bytes })),
    find: (fileId) => Effect.sync(() => files.get(fileId)?.record),
    findMany: (fileIds) =>
      Effect.sync(() => fileIds.flatMap((id) => {
        const entry = files.get(id)
        return entry === undefined ? [] : [entry.record]
      })),
    content: (fileId) => Effect.sync(() => files.get(fileId)),
    remove: (fileId) => Effect.sync(() => void files.delete(fileId)),
    page: (projectId, nowMs, after, limit) =>
      Effect.sync(() =>
        [...files.values()]
          .map((entry) => entry.record)
          .filter((r) => r.projectId === projectId && !isExpired(r, nowMs) && (after === undefined || r.fileId < after))
          .toSorted((a, b) => (a.fileId < b.fileId ? 1 : a.fileId > b.fileId ? -1 : 0))
          .slice(0, limit)
      ),
    // One fiber sweeps per process and the map is not shared, so no lock is needed here.
    sweep: (nowMs, limit) =>
      Effect.sync(() => {
        let deleted = 0
        for (const [id, entry] of files) {
          if (deleted >= limit) break
          if (isExpired(entry.record, nowMs)) {
            files.delete(id)
            deleted++
          }
        }
        return { ran: true, deleted }
      }),
    usage: (projectId, nowMs) =>
      Effect.sync(() => {
        let bytes = 0
        let firstExpiryMs: number | undefined
        for (const { record } of files.values()) {
          if (record.projectId !== projectId || isExpired(record, nowMs)) continue
          bytes += record.size
          if (firstExpiryMs === undefined || record.expiresMs < firstExpiryMs) firstExpiryMs = record.expiresMs
        }
        return { bytes, firstExpiryMs }
      })
  }
}

/**
 * SERVICE_FILE_MAX_BYTES and SERVICE_FILE_TTL_MS (the spec's Limits: Files), and
 * SERVICE_FILE_PROJECT_MAX_BYTES: how many bytes one project's live files may hold together
 * (2 GiB by default, about 80 files at the cap), so that one project cannot fill the process's
 * memory or the database's disk for everyone.
 */
export const fileSettings = Effect.all({
  maxBytes: integer("SERVICE_FILE_MAX_BYTES", 26_214_400, 1, 1024 * 1024 * 1024),
  // At most 10 years: an expiry must stay a date (a TTL near 2^53 ms made every upload a 500).
  ttlMs: integer("SERVICE_FILE_TTL_MS", 3_600_000, 1, 315_360_000_000),
  projectMaxBytes: integer("SERVICE_FILE_PROJECT_MAX_BYTES", 2 * 1024 * 1024 * 1024, 1, Number.MAX_SAFE_INTEGER)
})

/** The request-body ceiling of `POST /v1/files`: the base64 length of the cap plus 16 KiB. */
export const uploadCeiling = (maxBytes: number) => 4 * Math.ceil(maxBytes / 3) + 16 * 1024

/** The service over a backend, with the configured cap and TTL. */
export const layerFrom = <R>(backend: Effect.Effect<FileBackend, never, R>) =>
  Layer.effect(
    StagedFiles,
    Effect.gen(function*() {
      const settings = yield* fileSettings
      return StagedFiles.of(makeStagedFiles(yield* backend, settings))
    })
  )

export const layerMemory = layerFrom(Effect.sync(makeMemoryBackend))
