/**
 * The Effect client: one typed method per HTTP route, every failure a `ServiceError`.
 *
 * Built on `fetch` rather than `HttpApiClient.make(Api)`: the service answers every failure with
 * its own envelope (not the contract's tagged error schemas), the retry policy needs the raw
 * status and `Retry-After`, and the dashboard needs a Promise facade with no Effect runtime
 * wiring (no client middleware layers, no HttpClient layer). Response bodies are still decoded
 * with the contract's schemas, so a contract change breaks the client at compile time.
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import { isTerminal } from "../domain/executions/ExecutionRecord.ts"
import {
  type Connection,
  type ConnectionListQuery,
  ConnectionPage,
  Connection as ConnectionSchema,
  type CreateConnectionRequest,
  type CreateFileRequest,
  type ExecuteRequest,
  type ExecutionListQuery,
  type ExecutionPage,
  ExecutionPage as ExecutionPageSchema,
  type ExecutionRecord,
  ExecutionRecord as ExecutionRecordSchema,
  FileMetadata,
  FilePage,
  type Me,
  Me as MeSchema,
  type PageQuery,
  toBase64,
  type WaitOptions
} from "./Resources.ts"
import { ServiceError } from "./ServiceError.ts"
import { type Fetch, makeTransport } from "./Transport.ts"

export interface ClientOptions {
  /** The service's base address, e.g. `http://localhost:8080`. */
  readonly baseUrl: string
  readonly apiKey: string
  /** The user that execute, connection create and the lists act for when a call names none. */
  readonly userId?: string | undefined
  /** Defaults to the global `fetch`. */
  readonly fetch?: Fetch | undefined
}

type Op<A> = Effect.Effect<A, ServiceError>

export interface ServiceClientShape {
  /** Who the key is: project, key id, pinned user. */
  readonly me: () => Op<Me>
  readonly files: {
    readonly create: (request: CreateFileRequest) => Op<typeof FileMetadata.Type>
    readonly list: (query?: PageQuery) => Op<typeof FilePage.Type>
    readonly get: (fileId: string) => Op<typeof FileMetadata.Type>
  }
  readonly connections: {
    readonly create: (request: CreateConnectionRequest) => Op<Connection>
    readonly list: (query?: ConnectionListQuery) => Op<typeof ConnectionPage.Type>
    readonly get: (connectionId: string) => Op<Connection>
    readonly delete: (connectionId: string) => Op<void>
  }
  readonly executions: {
    /** 200 (terminal) or 202 (still running): either way the record; `wait` follows it. */
    readonly execute: (request: ExecuteRequest) => Op<ExecutionRecord>
    readonly get: (executionId: string) => Op<ExecutionRecord>
    readonly list: (query?: ExecutionListQuery) => Op<ExecutionPage>
    readonly cancel: (executionId: string) => Op<ExecutionRecord>
    /** Polls until the record is terminal; fails with code `timeout` (status 0) at the deadline. */
    readonly wait: (executionId: string, options?: WaitOptions) => Op<ExecutionRecord>
  }
}

const segment = (id: string) => encodeURIComponent(id)

const withUser = <T extends { readonly userId?: string | undefined }>(value: T, userId: string | undefined): T =>
  value.userId === undefined && userId !== undefined ? { ...value, userId } : value

export const makeServiceClient = (options: ClientOptions): ServiceClientShape => {
  const { send, json } = makeTransport(options)
  const defaultUser = options.userId

  const getExecution = (executionId: string) =>
    json({ method: "GET", path: `v1/executions/${segment(executionId)}` }, ExecutionRecordSchema)

  const wait = (executionId: string, waitOptions: WaitOptions = {}): Op<ExecutionRecord> =>
    Effect.gen(function*() {
      const pollMs = waitOptions.pollMs ?? 500
      const timeoutMs = waitOptions.timeoutMs ?? 60_000
      const deadline = (yield* Clock.currentTimeMillis) + timeoutMs
      while (true) {
        const record = yield* getExecution(executionId)
        if (isTerminal(record.status)) return record
        const now = yield* Clock.currentTimeMillis
        if (now >= deadline) {
          return yield* new ServiceError({
            status: 0,
            code: "timeout",
            message: `Execution ${executionId} was still ${record.status} after ${timeoutMs} ms.`,
            retryable: true,
            requestId: ""
          })
        }
        yield* Effect.sleep(Duration.millis(Math.min(pollMs, deadline - now)))
      }
    })

  return {
    me: () => json({ method: "GET", path: "v1/me" }, MeSchema),
    files: {
      create: (request) =>
        json({
          method: "POST",
          path: "v1/files",
          body: {
            name: request.name,
            content: typeof request.content === "string" ? request.content : toBase64(request.content),
            ...(request.mimeType !== undefined ? { mimeType: request.mimeType } : {})
          }
        }, FileMetadata),
      list: (query = {}) => json({ method: "GET", path: "v1/files", query: { ...query } }, FilePage),
      get: (fileId) => json({ method: "GET", path: `v1/files/${segment(fileId)}` }, FileMetadata)
    },
    connections: {
      create: (request) =>
        json({ method: "POST", path: "v1/connections", body: withUser(request, defaultUser) }, ConnectionSchema),
      list: (query = {}) =>
        json({ method: "GET", path: "v1/connections", query: { ...withUser(query, defaultUser) } }, ConnectionPage),
      get: (connectionId) => json({ method: "GET", path: `v1/connections/${segment(connectionId)}` }, ConnectionSchema),
      delete: (connectionId) =>
        Effect.asVoid(send({ method: "DELETE", path: `v1/connections/${segment(connectionId)}` }))
    },
    executions: {
      execute: (request) =>
        json({ method: "POST", path: "v1/execute", body: withUser(request, defaultUser) }, ExecutionRecordSchema),
      get: getExecution,
      list: (query = {}) =>
        json({ method: "GET", path: "v1/executions", query: { ...withUser(query, defaultUser) } }, ExecutionPageSchema),
      cancel: (executionId) =>
        json({ method: "POST", path: `v1/executions/${segment(executionId)}/cancel` }, ExecutionRecordSchema),
      wait
    }
  }
}

export class ServiceClient extends Context.Service<ServiceClient, ServiceClientShape>()("client/ServiceClient") {
  static readonly layer = (options: ClientOptions): Layer.Layer<ServiceClient> =>
    Layer.succeed(ServiceClient, makeServiceClient(options))
}
