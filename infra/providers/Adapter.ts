/**
 * What a provider adapter is handed and what it may fail with. The execution actor builds the
 * context (sealed credentials opened, the execution-bound file reader) and calls `run` once per
 * dispatch; interruption of the returned effect is how cancellation reaches the adapter.
 */
import { Context, type Effect, type Redacted } from "effect"
import type {
  InvalidInput,
  NotFound,
  ProviderError,
  ProviderUnavailable,
  RateLimited,
  Timeout
} from "../../domain/Errors.ts"
import type { Json } from "../eventlog/EventStore.ts"

export interface StagedFileContent {
  readonly fileId: string
  readonly name: string
  readonly mimeType: string
  readonly bytes: Uint8Array
}

/**
 * Reads staged files attached to one execution in its project, and nothing else. A `NotFound`
 * says why, for the execution's user: the file is not attached, or expired before it was read.
 */
export interface ExecutionFiles {
  readonly read: (fileId: string) => Effect.Effect<StagedFileContent, NotFound>
}

export interface AdapterContext {
  readonly executionId: string
  readonly projectId: string
  readonly userId: string
  /** The connection's opened credentials, e.g. `{token}` for bearer, `{apiKey}` for api_key. */
  readonly credentials: Redacted.Redacted<Readonly<Record<string, string>>> | undefined
  readonly files: ExecutionFiles
}

export type AdapterFailure = InvalidInput | ProviderError | ProviderUnavailable | RateLimited | Timeout

export interface ToolAdapter {
  readonly tool: string
  /** `input` has already been decoded by the tool's input schema. */
  readonly run: (input: unknown, context: AdapterContext) => Effect.Effect<Json, AdapterFailure>
}

export class Adapters extends Context.Service<Adapters, {
  readonly get: (tool: string) => ToolAdapter | undefined
}>()("app/infra/providers/Adapters") {}
