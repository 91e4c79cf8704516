/**
 * Handlers of the subscriptions group (spec, "Subscriptions"; decisions.md section 5). Who acts:
 * the body's userId, else the X-Service-User-Id header, else the pinned key's user; a pinned key
 * naming another user is 403. A pinned key, or an unpinned one naming a user in the header, sees,
 * rotates and deletes only that user's subscriptions (anything else is 404, as for another
 * project's). The ingest URL appears only in the create and rotate-secret answers.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import type { Subscription } from "../../domain/triggers/Subscription.ts"
import { Subscriptions } from "../../infra/triggers/Subscriptions.ts"
import { Api } from "../api/Api.ts"
import { Caller, type CallerShape } from "../api/Caller.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"
import { makeCursors } from "./Cursor.ts"
import { actingUser, USER_HEADER } from "./Users.ts"
import { storeFailuresAsDefects } from "./StoreDefects.ts"

/** Exactly the spec's public fields: no secret, no ingest URL, no cursor. */
export const publicSubscription = (subscription: Subscription) => ({
  subscriptionId: subscription.subscriptionId,
  projectId: subscription.projectId,
  userId: subscription.userId,
  trigger: subscription.trigger,
  ...(subscription.connectionId !== undefined ? { connectionId: subscription.connectionId } : {}),
  webhookEndpointIds: subscription.webhookEndpointIds,
  filters: subscription.filters,
  status: subscription.status,
  createdAt: subscription.createdAt,
  updatedAt: subscription.updatedAt,
  ...(subscription.pollIntervalSeconds !== undefined ? { pollIntervalSeconds: subscription.pollIntervalSeconds } : {})
})

const notFound = () => new NotFound({ message: "No such subscription." })
const badCursor = () => new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })

/** A storage fault is a defect here; the envelope answers it without details. */
const visibleTo = (caller: CallerShape, named: string | undefined, subscription: Subscription) => {
  // The middleware has refused a pinned key naming anyone else (403).
  const user = caller.pinnedUserId ?? named
  return user === undefined || subscription.userId === user
}

export const SubscriptionsHttp = HttpApiBuilder.group(Api, "subscriptions", (handlers) =>
  Effect.gen(function*() {
    const subscriptions = yield* Subscriptions
    const cursors = yield* makeCursors

    /** The caller's subscription, or 404 (absent, another project's, another user's for a pinned key). */
    const visible = Effect.fnUntraced(function*(subscriptionId: string) {
      const caller = yield* Caller
      const named = (yield* HttpServerRequest.HttpServerRequest).headers[USER_HEADER]
      const subscription = yield* subscriptions.get(caller.projectId, subscriptionId)
      if (!visibleTo(caller, named, subscription)) return yield* notFound()
      return subscription
    })

    return handlers
      .handle("create", Effect.fnUntraced(function*({ payload, headers }) {
        const caller = yield* Caller
        const userId = yield* actingUser(caller, { explicit: payload.userId, header: headers["x-service-user-id"] })
        if (userId === undefined) {
          return yield* new InvalidInput({ message: "Name the user: body userId or X-Service-User-Id (this key is not pinned to a user)." })
        }
        const { subscription, secret } = yield* subscriptions.create({
          projectId: caller.projectId,
          userId,
          trigger: payload.trigger,
          connectionId: payload.connectionId,
          webhookEndpointIds: payload.webhookEndpointIds,
          filters: payload.filters,
          pollIntervalSeconds: payload.pollIntervalSeconds
        })
        return {
          ...publicSubscription(subscription),
          ...(secret !== undefined ? { ingestUrl: subscriptions.ingestUrl(subscription.subscriptionId, secret) } : {})
        }
      }, storeFailuresAsDefects))
      .handle("list", Effect.fnUntraced(function*({ query, headers }) {
        const caller = yield* Caller
        // A pinned key lists its user's only; an unpinned key without a user lists the project's.
        const userId = yield* actingUser(caller, { explicit: query.userId, header: headers["x-service-user-id"] })
        const scope = `subscriptions:${caller.projectId}:${userId ?? ""}`
        const position = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor)
        const first = position?.[0]
        if (position !== undefined && (position.length !== 1 || typeof first !== "string")) return yield* badCursor()
        const limit = query.limit ?? DEFAULT_LIMIT
        const page = yield* subscriptions.list({ projectId: caller.projectId, userId, limit, after: typeof first === "string" ? first : undefined })
        const last = page.subscriptions[page.subscriptions.length - 1]
        return {
          subscriptions: page.subscriptions.map(publicSubscription),
          ...(page.hasMore && last !== undefined ? { nextCursor: cursors.encode(scope, [last.subscriptionId]) } : {})
        }
      }, storeFailuresAsDefects))
      .handle("get", Effect.fnUntraced(function*({ params }) {
        return publicSubscription(yield* visible(params.subscriptionId))
      }, storeFailuresAsDefects))
      .handle("rotateSecret", Effect.fnUntraced(function*({ params }) {
        const caller = yield* Caller
        yield* visible(params.subscriptionId)
        const { subscription, secret } = yield* subscriptions.rotateSecret(caller.projectId, params.subscriptionId)
        return {
          subscriptionId: subscription.subscriptionId,
          ingestUrl: subscriptions.ingestUrl(subscription.subscriptionId, secret),
          rotatedAt: subscription.updatedAt
        }
      }, storeFailuresAsDefects))
      .handle("remove", Effect.fnUntraced(function*({ params }) {
        const caller = yield* Caller
        yield* visible(params.subscriptionId)
        yield* subscriptions.remove(caller.projectId, params.subscriptionId)
      }, storeFailuresAsDefects))
  }))
