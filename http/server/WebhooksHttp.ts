/**
 * Handlers of the webhooks group. Every route refuses pinned keys first; lists page with
 * MAC-bound cursors scoped to the list, the project (and the endpoint for deliveries).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { InvalidInput } from "../../domain/Errors.ts"
import { ViewStore } from "../../infra/eventlog/ViewStore.ts"
import { type EndpointRow } from "../../infra/webhooks/WebhookProjections.ts"
import { DELIVERIES_TABLE, deliveryFromRow, publicDelivery } from "../../infra/webhooks/WebhookProjections.ts"
import { WebhookEndpoints } from "../../infra/webhooks/WebhookEndpoints.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { makeCursors } from "./Cursor.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"
import { storeFailuresAsDefects } from "./StoreDefects.ts"

const publicEndpoint = (endpoint: EndpointRow) => ({
  endpointId: endpoint.endpointId,
  url: endpoint.url,
  events: endpoint.events,
  active: endpoint.active,
  createdAt: endpoint.createdAt,
  updatedAt: endpoint.updatedAt,
  secretPrefix: endpoint.secretPrefix
})

/** A storage fault is a defect here; the envelope answers it without details. */
const projectCaller = Effect.gen(function*() {
  const caller = yield* Caller
  return caller.projectId
})

export const WebhooksHttp = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const endpoints = yield* WebhookEndpoints
    const views = yield* ViewStore
    const cursors = yield* makeCursors
    return handlers
      .handle("create", Effect.fnUntraced(function*({ payload }) {
        const projectId = yield* projectCaller
        const { endpoint, secret } = yield* endpoints.create(projectId, {
          url: payload.url,
          events: payload.events,
          active: payload.active ?? true
        })
        return { ...publicEndpoint(endpoint), secret }
      }, storeFailuresAsDefects))
      .handle("list", Effect.fnUntraced(function*({ query }) {
        const projectId = yield* projectCaller
        const scope = `webhooks:${projectId}`
        const after = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor)
        const afterId = after === undefined ? undefined : after[0]
        if (afterId !== undefined && typeof afterId !== "string") {
          return yield* new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })
        }
        const limit = query.limit ?? DEFAULT_LIMIT
        const rows = yield* endpoints.list(projectId, limit + 1, afterId)
        const page = rows.slice(0, limit)
        const last = page[page.length - 1]
        return {
          webhooks: page.map(publicEndpoint),
          ...(rows.length > limit && last !== undefined ? { nextCursor: cursors.encode(scope, [last.endpointId]) } : {})
        }
      }, storeFailuresAsDefects))
      .handle("get", Effect.fnUntraced(function*({ params }) {
        const projectId = yield* projectCaller
        return publicEndpoint(yield* endpoints.get(projectId, params.endpointId))
      }, storeFailuresAsDefects))
      .handle("update", Effect.fnUntraced(function*({ params, payload }) {
        const projectId = yield* projectCaller
        if (payload.url === undefined && payload.events === undefined && payload.active === undefined) {
          return yield* new InvalidInput({ message: "Give at least one of url, events, active." })
        }
        return publicEndpoint(yield* endpoints.update(projectId, params.endpointId, payload))
      }, storeFailuresAsDefects))
      .handle("rotateSecret", Effect.fnUntraced(function*({ params }) {
        const projectId = yield* projectCaller
        const { endpoint, secret } = yield* endpoints.rotateSecret(projectId, params.endpointId)
        return { endpointId: endpoint.endpointId, secret, secretPrefix: endpoint.secretPrefix }
      }, storeFailuresAsDefects))
      .handle("remove", Effect.fnUntraced(function*({ params }) {
        const projectId = yield* projectCaller
        yield* endpoints.remove(projectId, params.endpointId)
      }, storeFailuresAsDefects))
      .handle("deliveries", Effect.fnUntraced(function*({ params, query }) {
        const projectId = yield* projectCaller
        yield* endpoints.get(projectId, params.endpointId)
        const scope = `deliveries:${projectId}:${params.endpointId}`
        const after = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor)
        const limit = query.limit ?? DEFAULT_LIMIT
        const rows = yield* views.list(DELIVERIES_TABLE, {
          where: [{ column: "endpoint_id", op: "=", value: params.endpointId }],
          orderBy: [{ column: "source_position", direction: "desc" }, { column: "delivery_id", direction: "desc" }],
          after,
          limit: limit + 1
        })
        const page = rows.slice(0, limit).map(deliveryFromRow)
        const last = page[page.length - 1]
        return {
          deliveries: page.map(publicDelivery),
          ...(rows.length > limit && last !== undefined
            ? { nextCursor: cursors.encode(scope, [last.sourcePosition, last.deliveryId]) }
            : {})
        }
      }, storeFailuresAsDefects))
  }))
