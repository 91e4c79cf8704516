/**
 * The Promise facade for code that does not use Effect (the dashboard, scripts): the same
 * methods as `ServiceClient`, each returning a Promise that rejects with a `ServiceError`.
 * The type is derived from `ServiceClientShape`, so the two cannot drift apart.
 */
import { Effect } from "effect"
import { type ClientOptions, makeServiceClient, type ServiceClientShape } from "./ServiceClient.ts"
import type { ServiceError } from "./ServiceError.ts"

/** Each method of `ServiceClientShape`, answering a Promise of its success. */
type Promised<T> = {
  readonly [K in keyof T]: T[K] extends (...args: infer Args) => Effect.Effect<infer A, ServiceError> ? (...args: Args) => Promise<A>
    : Promised<T[K]>
}

export type Client = Promised<ServiceClientShape>

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
    },
    webhooks: {
      create: (request) => run(client.webhooks.create(request)),
      list: (query) => run(client.webhooks.list(query)),
      get: (endpointId) => run(client.webhooks.get(endpointId)),
      update: (endpointId, changes) => run(client.webhooks.update(endpointId, changes)),
      rotateSecret: (endpointId) => run(client.webhooks.rotateSecret(endpointId)),
      delete: (endpointId) => run(client.webhooks.delete(endpointId)),
      listDeliveries: (endpointId, query) => run(client.webhooks.listDeliveries(endpointId, query)),
      resendDelivery: (endpointId, deliveryId) => run(client.webhooks.resendDelivery(endpointId, deliveryId)),
      recover: (endpointId, recoverOptions) => run(client.webhooks.recover(endpointId, recoverOptions))
    },
    subscriptions: {
      create: (request) => run(client.subscriptions.create(request)),
      list: (query) => run(client.subscriptions.list(query)),
      get: (subscriptionId) => run(client.subscriptions.get(subscriptionId)),
      rotateSecret: (subscriptionId) => run(client.subscriptions.rotateSecret(subscriptionId)),
      delete: (subscriptionId) => run(client.subscriptions.delete(subscriptionId))
    },
    triggerEvents: {
      list: (query) => run(client.triggerEvents.list(query))
    }
  }
}
