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
  CreatedSubscription,
  CreatedWebhookEndpoint,
  type CreateFileRequest,
  type CreateSubscriptionRequest,
  type CreateWebhookRequest,
  DeliveryPage,
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
  type RecoverOptions,
  RecoverResult,
  RotatedIngestUrl,
  RotatedWebhookSecret,
  Subscription,
  type SubscriptionListQuery,
  SubscriptionPage,
  toBase64,
  type TriggerEventListQuery,
  TriggerEventPage,
  type UpdateWebhookRequest,
  type WaitOptions,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookPage
} from "./Resources.ts"
import { type ServiceError, timedOut, unsendable } from "./ServiceError.ts"
import { type Fetch, makeTransport, type RetryWait } from "./Transport.ts"

export interface ClientOptions {
  /** The service's base address, e.g. `http://localhost:8080`. */
  readonly baseUrl: string
  readonly apiKey: string
  /**
   * The user that execute, connection and subscription create, and the connection, execution
   * and subscription lists act for when a call names none.
   */
  readonly userId?: string | undefined
  /** Defaults to the global `fetch`. */
  readonly fetch?: Fetch | undefined
  /** Told before the client waits to send a refused GET or HEAD once more (README, Retries). */
  readonly onRetryWait?: ((wait: RetryWait) => void) | undefined
  /** Each HTTP exchange's deadline (code `timeout`, not retried); default 80000 ms, 0 for none. */
  readonly requestTimeoutMs?: number | undefined
}

type Op<A> = Effect.Effect<A, ServiceError>

export interface ServiceClientShape {
  /** Who the key is: project, key id, pinned user. */
  readonly me: () => Op<Me>
  readonly files: {
    /** `content` as bytes or standard padded base64. */
    readonly create: (request: CreateFileRequest) => Op<FileMetadata>
    /** Unpinned keys only; newest first, expired files omitted. */
    readonly list: (query?: PageQuery) => Op<FilePage>
    readonly get: (fileId: string) => Op<FileMetadata>
  }
  readonly connections: {
    readonly create: (request: CreateConnectionRequest) => Op<Connection>
    readonly list: (query?: ConnectionListQuery) => Op<ConnectionPage>
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
  /** Webhook endpoints: unpinned keys only (a pinned key gets 403 on every route). */
  readonly webhooks: {
    /** The answer carries the signing secret, shown this once. */
    readonly create: (request: CreateWebhookRequest) => Op<CreatedWebhookEndpoint>
    readonly list: (query?: PageQuery) => Op<WebhookPage>
    readonly get: (endpointId: string) => Op<WebhookEndpoint>
    /** PATCH with any non-empty combination of url, events, active. */
    readonly update: (endpointId: string, changes: UpdateWebhookRequest) => Op<WebhookEndpoint>
    /** A new signing secret; the old one stops signing at once, queued retries included. */
    readonly rotateSecret: (endpointId: string) => Op<RotatedWebhookSecret>
    readonly delete: (endpointId: string) => Op<void>
    /** The endpoint's delivery records, newest first: metadata and attempts, never payloads. */
    readonly listDeliveries: (endpointId: string, query?: PageQuery) => Op<DeliveryPage>
    /**
     * A new delivery of the same event (decisions.md 9, unpinned keys), same `eventId`, at the
     * tail of the endpoint's lane. 409 when a trigger event's payload is gone.
     */
    readonly resendDelivery: (endpointId: string, deliveryId: string) => Op<WebhookDelivery>
    /**
     * Queues the endpoint's failed deliveries since `since` again (decisions.md 9, unpinned keys);
     * answers how many. A delivery whose redelivery is still open is not queued twice: a second
     * call with the same `since` counts it again only once that redelivery has failed too.
     */
    readonly recover: (endpointId: string, options: RecoverOptions) => Op<RecoverResult>
  }
  /**
   * Trigger subscriptions (spec "Subscriptions", decisions.md 5).
   */
  readonly subscriptions: {
    /** Push subscriptions answer their secret `ingestUrl` this once; polling ones `pollIntervalSeconds`. */
    readonly create: (request: CreateSubscriptionRequest) => Op<CreatedSubscription>
    readonly list: (query?: SubscriptionListQuery) => Op<SubscriptionPage>
    readonly get: (subscriptionId: string) => Op<Subscription>
    /** Push subscriptions only (422 for polling): a new ingest URL; the old one stops at once. */
    readonly rotateSecret: (subscriptionId: string) => Op<RotatedIngestUrl>
    readonly delete: (subscriptionId: string) => Op<void>
  }
  /**
   * Trigger event history (spec "Trigger event history"), unpinned keys only.
   */
  readonly triggerEvents: {
    readonly list: (query?: TriggerEventListQuery) => Op<TriggerEventPage>
  }
}

const segment = (id: string) => encodeURIComponent(id)

const withUser = <T extends { readonly userId?: string | undefined }>(value: T, userId: string | undefined): T =>
  value.userId === undefined && userId !== undefined ? { ...value, userId } : value

const webhook = (endpointId: string) => `v1/webhooks/${segment(endpointId)}`
const subscription = (subscriptionId: string) => `v1/subscriptions/${segment(subscriptionId)}`

const isoTime = (time: string | Date): string => (typeof time === "string" ? time : time.toISOString())

/** A failure of one poll that `wait` polls on through: no answer at all, or a retryable 503. */
const passing = (error: ServiceError): boolean => error.retryable && (error.status === 0 || error.status === 503)

/** Polls of `wait` are at least this far apart: a pollMs of 0 would spend the project's request budget in a loop. */
const MIN_POLL_MS = 20

const pollDelay = (pollMs: number | undefined) =>
  pollMs === undefined || Number.isNaN(pollMs) ? 500 : Math.max(MIN_POLL_MS, pollMs)

/**
 * The operations of `shape`, each answering a ServiceError `invalid_input` for an argument it
 * cannot turn into a request (an invalid Date, an id with a lone surrogate no URL can carry)
 * instead of throwing as it builds its Effect: every failure is a ServiceError.
 */
const guarded = <A extends object>(shape: A): A => {
  const result: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(shape)) {
    result[name] = typeof value === "function"
      ? (...args: Array<unknown>) => {
        try {
          return (value as (...args: Array<unknown>) => unknown)(...args)
        } catch (error) {
          return Effect.fail(unsendable(`${name}: ${error instanceof Error ? error.message : String(error)}`))
        }
      }
      : typeof value === "object" && value !== null ? guarded(value) : value
  }
  return result as A
}

export const makeServiceClient = (options: ClientOptions): ServiceClientShape => guarded(makeOperations(options))

const makeOperations = (options: ClientOptions): ServiceClientShape => {
  const { send, json } = makeTransport(options)
  const defaultUser = options.userId

  const getExecution = (executionId: string) =>
    json({ method: "GET", path: `v1/executions/${segment(executionId)}` }, ExecutionRecordSchema)

  /**
   * The deadline holds for the whole wait, a poll's own retry delay included: a 429 asking for
   * more seconds than are left ends the wait at its deadline, not after the delay.
   */
  const wait = Effect.fnUntraced(function*(executionId: string, waitOptions: WaitOptions = {}) {
    const pollMs = pollDelay(waitOptions.pollMs)
    const timeoutMs = waitOptions.timeoutMs ?? 60_000
    const deadline = (yield* Clock.currentTimeMillis) + timeoutMs
    let status: string | undefined
    const waitedOut = () =>
      timedOut(
        status === undefined
          ? `No record of execution ${executionId} was read within ${timeoutMs} ms.`
          : `Execution ${executionId} was still ${status} after ${timeoutMs} ms.`
      )
    const poll = Effect.gen(function*() {
      while (true) {
        // A poll that got no answer, or the service's 503 (its store away), is a moment's
        // trouble, not the execution's: the wait polls on until its deadline.
        const read = yield* Effect.catchIf(getExecution(executionId), passing, () => Effect.succeed(undefined))
        if (read === undefined) {
          yield* Effect.sleep(Duration.millis(pollMs))
          continue
        }
        const record = read
        if (isTerminal(record.status)) return record
        status = record.status
        const now = yield* Clock.currentTimeMillis
        if (now >= deadline) return yield* waitedOut()
        yield* Effect.sleep(Duration.millis(Math.min(pollMs, deadline - now)))
      }
    })
    // A deadline already past still reads the record once (and returns it when terminal).
    if (!(timeoutMs > 0)) return yield* poll
    return yield* Effect.timeoutOrElse(poll, { duration: Duration.millis(timeoutMs), orElse: () => Effect.fail(waitedOut()) })
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
    },
    webhooks: {
      create: (request) => json({ method: "POST", path: "v1/webhooks", body: request }, CreatedWebhookEndpoint),
      list: (query = {}) => json({ method: "GET", path: "v1/webhooks", query: { ...query } }, WebhookPage),
      get: (endpointId) => json({ method: "GET", path: webhook(endpointId) }, WebhookEndpoint),
      update: (endpointId, changes) => json({ method: "PATCH", path: webhook(endpointId), body: changes }, WebhookEndpoint),
      rotateSecret: (endpointId) =>
        json({ method: "POST", path: `${webhook(endpointId)}/rotate-secret` }, RotatedWebhookSecret),
      delete: (endpointId) => Effect.asVoid(send({ method: "DELETE", path: webhook(endpointId) })),
      listDeliveries: (endpointId, query = {}) =>
        json({ method: "GET", path: `${webhook(endpointId)}/deliveries`, query: { ...query } }, DeliveryPage),
      resendDelivery: (endpointId, deliveryId) =>
        json({ method: "POST", path: `${webhook(endpointId)}/deliveries/${segment(deliveryId)}/resend` }, WebhookDelivery),
      recover: (endpointId, recoverOptions) =>
        json({ method: "POST", path: `${webhook(endpointId)}/recover`, body: { since: isoTime(recoverOptions.since) } }, RecoverResult)
    },
    subscriptions: {
      create: (request) =>
        json({ method: "POST", path: "v1/subscriptions", body: withUser(request, defaultUser) }, CreatedSubscription),
      list: (query = {}) =>
        json({ method: "GET", path: "v1/subscriptions", query: { ...withUser(query, defaultUser) } }, SubscriptionPage),
      get: (subscriptionId) => json({ method: "GET", path: subscription(subscriptionId) }, Subscription),
      rotateSecret: (subscriptionId) =>
        json({ method: "POST", path: `${subscription(subscriptionId)}/rotate-secret` }, RotatedIngestUrl),
      delete: (subscriptionId) => Effect.asVoid(send({ method: "DELETE", path: subscription(subscriptionId) }))
    },
    triggerEvents: {
      list: (query = {}) => json({ method: "GET", path: "v1/trigger-events", query: { ...query } }, TriggerEventPage)
    }
  }
}

export class ServiceClient extends Context.Service<ServiceClient, ServiceClientShape>()("client/ServiceClient") {
  static readonly layer = (options: ClientOptions): Layer.Layer<ServiceClient> =>
    Layer.succeed(ServiceClient, makeServiceClient(options))
}
