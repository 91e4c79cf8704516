/**
 * The Promise facade for code that does not use Effect (the dashboard, scripts): the same
 * methods as `ServiceClient`, each returning a Promise that rejects with a `ServiceError`.
 */
import { Effect } from "effect"
import type {
  Connection,
  ConnectionListQuery,
  ConnectionPage,
  CreateConnectionRequest,
  CreateFileRequest,
  ExecuteRequest,
  ExecutionListQuery,
  ExecutionPage,
  ExecutionRecord,
  FileMetadata,
  FilePage,
  Me,
  PageQuery,
  WaitOptions
} from "./Resources.ts"
import { type ClientOptions, makeServiceClient } from "./ServiceClient.ts"
import type { ServiceError } from "./ServiceError.ts"

export interface Client {
  readonly me: () => Promise<Me>
  readonly files: {
    readonly create: (request: CreateFileRequest) => Promise<FileMetadata>
    readonly list: (query?: PageQuery) => Promise<FilePage>
    readonly get: (fileId: string) => Promise<FileMetadata>
  }
  readonly connections: {
    readonly create: (request: CreateConnectionRequest) => Promise<Connection>
    readonly list: (query?: ConnectionListQuery) => Promise<ConnectionPage>
    readonly get: (connectionId: string) => Promise<Connection>
    readonly delete: (connectionId: string) => Promise<void>
  }
  readonly executions: {
    readonly execute: (request: ExecuteRequest) => Promise<ExecutionRecord>
    readonly get: (executionId: string) => Promise<ExecutionRecord>
    readonly list: (query?: ExecutionListQuery) => Promise<ExecutionPage>
    readonly cancel: (executionId: string) => Promise<ExecutionRecord>
    readonly wait: (executionId: string, options?: WaitOptions) => Promise<ExecutionRecord>
  }
}

// Effect.runPromise rejects with the failure itself, so callers catch a ServiceError instance.
const run = <A>(effect: Effect.Effect<A, ServiceError>): Promise<A> => Effect.runPromise(effect)

export const createClient = (options: ClientOptions): Client => {
  const client = makeServiceClient(options)
  return {
    me: () => run(client.me()),
    files: {
      create: (request) => run(client.files.create(request)),
      list: (query) => run(client.files.list(query)),
      get: (fileId) => run(client.files.get(fileId))
    },
    connections: {
      create: (request) => run(client.connections.create(request)),
      list: (query) => run(client.connections.list(query)),
      get: (connectionId) => run(client.connections.get(connectionId)),
      delete: (connectionId) => run(client.connections.delete(connectionId))
    },
    executions: {
      execute: (request) => run(client.executions.execute(request)),
      get: (executionId) => run(client.executions.get(executionId)),
      list: (query) => run(client.executions.list(query)),
      cancel: (executionId) => run(client.executions.cancel(executionId)),
      wait: (executionId, waitOptions) => run(client.executions.wait(executionId, waitOptions))
    }
  }
}
