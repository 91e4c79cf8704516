/**
 * What executions need from features built elsewhere, as small services with simple defaults,
 * so that the real connection store and staged files plug in without touching the executor.
 */
import { Context, Effect, Layer, type Redacted } from "effect"
import { findToolkit } from "../../domain/catalog/index.ts"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import type { ExecutionFiles } from "../providers/Adapter.ts"

export interface ConnectionRequest {
  readonly projectId: string
  readonly userId: string
  readonly toolkit: string
  readonly connectionId?: string | undefined
  readonly scopes: ReadonlyArray<string>
}

export interface ResolvedConnection {
  readonly connectionId?: string | undefined
  readonly credentials?: Redacted.Redacted<Readonly<Record<string, string>>> | undefined
}

/** Finds the connection an execution runs with, and opens its credentials. */
export class ConnectionResolver extends Context.Service<ConnectionResolver, {
  readonly resolve: (request: ConnectionRequest) => Effect.Effect<ResolvedConnection, InvalidInput>
}>()("app/infra/ConnectionResolver") {
  /** Toolkits whose only auth class is `none` need nothing; the others have no connection. */
  static readonly layerDefault = Layer.succeed(ConnectionResolver, {
    resolve: (request) => {
      const toolkit = findToolkit(request.toolkit)
      if (toolkit !== undefined && toolkit.authClasses.every((c) => c === "none")) {
        return request.connectionId === undefined
          ? Effect.succeed({})
          : Effect.fail(new InvalidInput({ message: `Toolkit ${request.toolkit} takes no connection.` }))
      }
      return Effect.fail(new InvalidInput({ message: `There is no connection for toolkit ${request.toolkit}.` }))
    }
  })
}

/** Staged files as executions see them: existence checks and the execution-bound reader. */
export class AttachmentFiles extends Context.Service<AttachmentFiles, {
  /** The ids among `fileIds` that are not live staged files of the project. */
  readonly missing: (projectId: string, fileIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>>
  /** A reader of exactly the execution's attachments. */
  readonly forExecution: (
    options: { readonly projectId: string; readonly executionId: string; readonly attachments: ReadonlyArray<string> }
  ) => ExecutionFiles
}>()("app/infra/AttachmentFiles") {
  /** No staged files: every id is missing and nothing can be read. */
  static readonly layerDefault = Layer.succeed(AttachmentFiles, {
    missing: (_projectId, fileIds) => Effect.succeed(fileIds),
    forExecution: () => ({ read: (fileId) => Effect.fail(new NotFound({ message: `File ${fileId} was not found.` })) })
  })
}
