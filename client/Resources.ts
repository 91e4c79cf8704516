/**
 * The resource shapes the client reads and writes. Everything the server contract already
 * declares is imported from it (`http/*Api.ts`, `domain/*`); staged files are declared here from
 * the interface spec until their contract lands.
 */
import { Schema } from "effect"
import { Connection, type CreateConnection } from "../http/api/ConnectionsApi.ts"
import { Me } from "../http/api/SystemApi.ts"
import type { ExecutionStatus } from "../domain/executions/ExecutionRecord.ts"

// Both the schema and its type, straight from the contract.
export { Connection } from "../http/api/ConnectionsApi.ts"
export { ExecuteRequest } from "../http/api/ExecutionsApi.ts"
export { ExecutionPage, ExecutionRecord, ExecutionStatus } from "../domain/executions/ExecutionRecord.ts"
export { Me }

export type Me = typeof Me.Type
export type CreateConnectionRequest = typeof CreateConnection.Type

export const ConnectionPage = Schema.Struct({ connections: Schema.Array(Connection), nextCursor: Schema.optionalKey(Schema.String) })
export type ConnectionPage = typeof ConnectionPage.Type

/** Staged file metadata and pages: the same schemas the service answers with. */
export { FileMetadata, FilePage } from "../domain/files/Files.ts"

export interface CreateFileRequest {
  readonly name: string
  /** The bytes, or their standard base64 encoding. */
  readonly content: Uint8Array | string
  readonly mimeType?: string
}

export interface PageQuery {
  readonly limit?: number
  readonly cursor?: string
}

export interface ConnectionListQuery extends PageQuery {
  readonly userId?: string
}

export interface ExecutionListQuery extends PageQuery {
  readonly status?: ExecutionStatus
  readonly tool?: string
  readonly userId?: string
}

export interface WaitOptions {
  /** Delay between polls; default 500 ms. */
  readonly pollMs?: number
  /** Give up with a `timeout` ServiceError after this long; default 60000 ms. */
  readonly timeoutMs?: number
}

/** Standard base64 without Node's Buffer, so that browsers can use the client too. */
export const toBase64 = (bytes: Uint8Array): string => {
  let binary = ""
  const chunk = 0x8000
  for (let i = 0; i < bytes.length; i += chunk) binary += String.fromCharCode(...bytes.subarray(i, i + chunk))
  return btoa(binary)
}
