/**
 * Staged files (spec, "Staged file metadata", "Limits: Files"): the public metadata, the upload
 * request, and the pure rules around them. The bytes never appear in anything public.
 */
import { Schema } from "effect"
import { isPrintable } from "../PrintableText.ts"

export const DEFAULT_MIME_TYPE = "application/octet-stream"
export const MAX_NAME_LENGTH = 255

/**
 * `type/subtype` with optional parameters, in RFC 6838 token characters; at most 255 characters.
 * A client's type is kept as supplied (adapters forward it), so it must at least be well formed.
 */
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(?:\s*;\s*[A-Za-z0-9!#$&^_.+-]+=(?:[A-Za-z0-9!#$&^_.+-]+|"[^"\\\r\n]*"))*$/u

export const MimeType = Schema.String.check(
  Schema.isMaxLength(255),
  Schema.isPattern(MIME_TYPE, { message: "mimeType must be a media type like type/subtype" })
)

/**
 * At most `max` characters counted in code points, as a person counts them and JSON Schema's
 * `maxLength` does; a string's `length` counts UTF-16 units, two for an emoji.
 */
const isMaxCharacters = (max: number) =>
  Schema.makeFilter<string>((text) => text.length <= max || [...text].length <= max, {
    expected: `a value of at most ${max} characters`,
    toJsonSchema: () => ({ maxLength: max })
  })

// Names are shown back as supplied; control characters would corrupt logs and headers downstream.
export const FileName = Schema.String.check(
  Schema.isMinLength(1),
  isMaxCharacters(MAX_NAME_LENGTH),
  isPrintable("name must not contain control characters")
)

/** The upload body: closed (the API rejects unknown fields). */
export const StageFileRequest = Schema.Struct({
  name: FileName,
  content: Schema.String,
  mimeType: Schema.optionalKey(MimeType)
})
export type StageFileRequest = typeof StageFileRequest.Type

export const FileMetadata = Schema.Struct({
  fileId: Schema.String,
  name: Schema.String,
  mimeType: Schema.String,
  size: Schema.Int,
  expiresAt: Schema.String
})
export type FileMetadata = typeof FileMetadata.Type

export const FilePage = Schema.Struct({
  files: Schema.Array(FileMetadata),
  nextCursor: Schema.optionalKey(Schema.String)
})
export type FilePage = typeof FilePage.Type

/** A stored file's facts, as both stores keep them (times in epoch milliseconds). */
export interface StagedFileRecord {
  readonly fileId: string
  readonly projectId: string
  readonly name: string
  readonly mimeType: string
  readonly size: number
  readonly createdMs: number
  readonly expiresMs: number
}

export const isExpired = (record: Pick<StagedFileRecord, "expiresMs">, nowMs: number): boolean => record.expiresMs <= nowMs

export const toMetadata = (record: StagedFileRecord): FileMetadata => ({
  fileId: record.fileId,
  name: record.name,
  mimeType: record.mimeType,
  size: record.size,
  expiresAt: new Date(record.expiresMs).toISOString()
})

/** The one answer for every id that does not name a live file of the caller's project. */
export const FILE_NOT_FOUND_MESSAGE = "No such file."
