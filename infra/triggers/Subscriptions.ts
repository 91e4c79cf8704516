/**
 * Subscription commands and reads (spec, "Subscriptions"; decisions.md section 5): every check a
 * create makes (trigger, cadence, filters, endpoints, connection), each refusal a 422 naming what
 * is wrong; then the actor's decision is appended (domain/triggers/Subscription.ts) and the inline
 * view answers the read after it. The ingest secret is generated here, shown once (create and
 * rotate answers) and kept only as its SHA-256.
 *
 * Deleting a subscription also removes its dedup claims and its polling cursor; its history rows
 * stay until they expire.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { createHash, randomBytes } from "node:crypto"
import type { TriggerDefinition } from "../../domain/catalog/Catalog.ts"
import { decodeTriggerFilters, findToolkit, findTrigger } from "../../domain/catalog/index.ts"
import { needsConnection } from "../../domain/Connection.ts"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import type { JsonObject } from "../../domain/JsonObject.ts"
import { isoTime } from "../../domain/Time.ts"
import {
  INGEST_SECRET_PREFIX,
  type Subscription,
  type SubscriptionCommand,
  subscriptionDecider,
  type SubscriptionRejection,
  subscriptionStreamId
} from "../../domain/triggers/Subscription.ts"
import { Connections } from "../connections/Connections.ts"
import { handleCommand } from "../eventlog/CommandHandler.ts"
import { EventStore, StoreUnavailable } from "../eventlog/EventStore.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { newId } from "../Ids.ts"
import { inOrder, makeBatcher } from "../Batcher.ts"
import { isDurable } from "../eventlog/Database.ts"
import { ViewReads } from "./ViewReads.ts"
import { WebhookEndpoints } from "../webhooks/WebhookEndpoints.ts"
import { DedupClaims } from "./DedupClaims.ts"
import { PollCursors } from "./PollCursors.ts"
import { subscriptionFromRow, SUBSCRIPTIONS_TABLE } from "./TriggerProjections.ts"
import { DEFAULT_POLL_SECONDS, MAX_POLL_SECONDS, triggerSettings } from "./TriggerSettings.ts"
import { makeStreamLocks } from "../eventlog/StreamLocks.ts"

export interface CreateSubscriptionInput {
  readonly projectId: string
  readonly userId: string
  readonly trigger: string
  readonly connectionId?: string | undefined
  readonly webhookEndpointIds: ReadonlyArray<string>
  readonly filters?: typeof JsonObject.Type | undefined
  readonly pollIntervalSeconds?: number | undefined
}

export interface ListSubscriptionsQuery {
  readonly projectId: string
  readonly userId?: string | undefined
  readonly limit: number
  /** The subscriptionId of the last item of the previous page. */
  readonly after?: string | undefined
}

export interface SubscriptionsShape {
  /** The new subscription, and for a push one its ingest secret (shown this once). */
  readonly create: (input: CreateSubscriptionInput) => Effect.Effect<{ readonly subscription: Subscription; readonly secret?: string }, InvalidInput | StoreUnavailable>
  /** The subscription if it lives in this project; which user may see it is the caller's check. */
  readonly get: (projectId: string, subscriptionId: string) => Effect.Effect<Subscription, NotFound | StoreUnavailable>
  /** Any live subscription by id (ingest, pollers). */
  readonly find: (subscriptionId: string) => Effect.Effect<Subscription | undefined, StoreUnavailable>
  /** Newest first. */
  readonly list: (query: ListSubscriptionsQuery) => Effect.Effect<{ readonly subscriptions: ReadonlyArray<Subscription>; readonly hasMore: boolean }, StoreUnavailable>
  readonly rotateSecret: (projectId: string, subscriptionId: string) =>
    Effect.Effect<{ readonly subscription: Subscription; readonly secret: string }, NotFound | InvalidInput | StoreUnavailable>
  readonly remove: (projectId: string, subscriptionId: string) => Effect.Effect<void, NotFound | StoreUnavailable>
  /** `{base_url}/v1/ingest/<subscriptionId>/<secret>`. */
  readonly ingestUrl: (subscriptionId: string, secret: string) => string
  /** Receives the id of every subscription created or deleted in this process (pollers start or stop at once). */
  readonly onChange: (listener: (subscriptionId: string) => void) => void
}

export class Subscriptions extends Context.Service<Subscriptions, SubscriptionsShape>()("app/infra/triggers/Subscriptions") {}

/** Triggers whose provider side exists here: the push body normalizers and the GitHub poller. */
export const IMPLEMENTED_TRIGGERS: ReadonlySet<string> = new Set(["demo.event", "slack.message_posted", "github.issue_opened"])

export const MAX_ENDPOINTS = 20

export const secretHash = (secret: string): string => createHash("sha256").update(secret, "utf8").digest("hex")

/** `trgsec_` + 43 base64url characters (256 random bits). */
export const generateIngestSecret = (): string => `${INGEST_SECRET_PREFIX}${randomBytes(32).toString("base64url")}`

const invalid = (message: string) => new InvalidInput({ message })
const notFound = () => new NotFound({ message: "No such subscription." })

const rejection = (refused: SubscriptionRejection): NotFound | InvalidInput =>
  refused._tag === "NotPushSubscription"
    ? invalid("Polling subscriptions have no ingest URL, so no secret to rotate.")
    : notFound()

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const endpoints = yield* WebhookEndpoints
  const connections = yield* Connections
  const claims = yield* DedupClaims
  const cursors = yield* PollCursors
  const settings = yield* Effect.orDie(triggerSettings)
  const reads = yield* ViewReads
  const listeners: Array<(subscriptionId: string) => void> = []
  const changed = (subscriptionId: string) => Effect.sync(() => listeners.forEach((listener) => listener(subscriptionId)))

  // Every ingest request reads its subscription: with a database the reads asked for while one
  // statement runs share the next (`= ANY`), as the lanes' endpoint reads do.
  const readMany = (ids: ReadonlyArray<string>) =>
    Effect.map(reads.byKeys(SUBSCRIPTIONS_TABLE, ids), (rows) => {
      const byId = new Map(rows.map((row) => {
        const subscription = subscriptionFromRow(row)
        return [subscription.subscriptionId, subscription] as const
      }))
      return ids.map((id) => byId.get(id))
    })
  const find: (subscriptionId: string) => Effect.Effect<Subscription | undefined, StoreUnavailable> = (yield* isDurable)
    ? yield* makeBatcher<string, Subscription | undefined, StoreUnavailable>({ maxBatch: 500, serve: inOrder(readMany) })
    : (subscriptionId) =>
      Effect.map(views.get(SUBSCRIPTIONS_TABLE, { subscription_id: subscriptionId }), (row) => (row === undefined ? undefined : subscriptionFromRow(row)))

  const get = (projectId: string, subscriptionId: string) =>
    Effect.flatMap(find(subscriptionId), (found) =>
      found === undefined || found.projectId !== projectId ? Effect.fail(notFound()) : Effect.succeed(found))

  const locks = makeStreamLocks()

  /** Runs a command on the subscription's stream, one at a time per stream in this process. */
  const execute = (subscriptionId: string, command: SubscriptionCommand) =>
    locks([subscriptionStreamId(subscriptionId)], handleCommand(store, subscriptionDecider, subscriptionStreamId(subscriptionId), command)).pipe(
      Effect.catchIf((error): error is SubscriptionRejection => error._tag !== "StoreUnavailable", (refused) => Effect.fail(rejection(refused)))
    )

  const checkCadence = (trigger: TriggerDefinition, given: number | undefined) => {
    if (trigger.deliveryMode === "push") {
      return given === undefined ? Effect.succeed(undefined) : Effect.fail(invalid(`pollIntervalSeconds applies to polling triggers only; ${trigger.name} is a push trigger.`))
    }
    const seconds = given ?? Math.max(DEFAULT_POLL_SECONDS, settings.minPollSeconds)
    return seconds >= settings.minPollSeconds && seconds <= MAX_POLL_SECONDS
      ? Effect.succeed(seconds)
      : Effect.fail(invalid(`pollIntervalSeconds must be an integer from ${settings.minPollSeconds} to ${MAX_POLL_SECONDS}.`))
  }

  const checkEndpoints = Effect.fnUntraced(function*(projectId: string, trigger: TriggerDefinition, ids: ReadonlyArray<string>) {
    if (ids.length === 0 || ids.length > MAX_ENDPOINTS) return yield* invalid(`webhookEndpointIds must list 1 to ${MAX_ENDPOINTS} endpoints.`)
    if (new Set(ids).size !== ids.length) return yield* invalid("webhookEndpointIds must not repeat an endpoint.")
    const wanted = `trigger.${trigger.name}`
    for (const id of ids) {
      const endpoint = yield* endpoints.find(id)
      if (endpoint === undefined || endpoint.projectId !== projectId) return yield* invalid(`Webhook endpoint ${id} does not exist.`)
      if (!endpoint.events.includes(wanted) && !endpoint.events.includes("trigger.*")) {
        return yield* invalid(`Webhook endpoint ${id} is not subscribed to ${wanted} or trigger.*.`)
      }
    }
    return ids
  })

  const checkConnection = Effect.fnUntraced(function*(input: CreateSubscriptionInput, trigger: TriggerDefinition) {
    const toolkit = findToolkit(trigger.toolkit)
    if (toolkit === undefined) return yield* invalid(`Trigger ${trigger.name} has no toolkit.`)
    if (!needsConnection(toolkit)) {
      if (input.connectionId !== undefined) return yield* invalid(`Toolkit ${toolkit.name} takes no connection; leave connectionId out.`)
      return undefined
    }
    // Picks the named or the user's single connection of the toolkit; refuses another user's or
    // project's, another toolkit's, an expired one and one lacking the trigger's scopes.
    const resolved = yield* connections.resolve({
      projectId: input.projectId,
      userId: input.userId,
      toolkit: toolkit.name,
      connectionId: input.connectionId,
      scopes: trigger.scopes
    })
    const connectionId = resolved.connectionId
    const connection = connectionId === undefined ? undefined : yield* connections.get(input.projectId, connectionId)
    if (connectionId === undefined || connection === undefined) return yield* invalid(`User ${input.userId} has no connection for toolkit ${toolkit.name}.`)
    if (!toolkit.authClasses.includes(connection.authClass)) {
      return yield* invalid(`Toolkit ${toolkit.name} takes auth classes ${toolkit.authClasses.join(", ")}, not ${connection.authClass}.`)
    }
    return connectionId
  })

  const create = Effect.fn("Subscriptions.create")(function*(input: CreateSubscriptionInput) {
    const trigger = findTrigger(input.trigger)
    if (trigger === undefined || trigger.name !== input.trigger) return yield* invalid(`Unknown trigger ${JSON.stringify(input.trigger)}; name a catalog trigger as <toolkit>.<name>.`)
    if (!IMPLEMENTED_TRIGGERS.has(trigger.name)) return yield* invalid(`Trigger ${trigger.name} has no provider implementation here.`)
    const pollIntervalSeconds = yield* checkCadence(trigger, input.pollIntervalSeconds)
    const filters = input.filters ?? {}
    yield* decodeTriggerFilters(trigger, filters)
    const webhookEndpointIds = yield* checkEndpoints(input.projectId, trigger, input.webhookEndpointIds)
    const connectionId = yield* checkConnection(input, trigger)
    const secret = trigger.deliveryMode === "push" ? generateIngestSecret() : undefined
    const subscriptionId = newId("trgsub")
    yield* execute(subscriptionId, {
      type: "CreateSubscription",
      subscription: {
        subscriptionId,
        projectId: input.projectId,
        userId: input.userId,
        trigger: trigger.name,
        deliveryMode: trigger.deliveryMode,
        ...(connectionId !== undefined ? { connectionId } : {}),
        webhookEndpointIds: [...webhookEndpointIds],
        filters,
        ...(pollIntervalSeconds !== undefined ? { pollIntervalSeconds } : {}),
        ...(secret !== undefined ? { secretHash: secretHash(secret) } : {}),
        at: isoTime(yield* Clock.currentTimeMillis)
      }
    }).pipe(Effect.catchTag("NotFound", () => Effect.die(new Error("new subscription id collided"))))
    yield* changed(subscriptionId)
    const subscription = yield* Effect.orDie(get(input.projectId, subscriptionId))
    return secret === undefined ? { subscription } : { subscription, secret }
  })

  return Subscriptions.of({
    create,
    get,
    find,
    list: (query) =>
      Effect.map(
        views.list(SUBSCRIPTIONS_TABLE, {
          where: [
            { column: "project_id", op: "=", value: query.projectId },
            ...(query.userId !== undefined ? [{ column: "user_id", op: "=" as const, value: query.userId }] : [])
          ],
          orderBy: [{ column: "subscription_id", direction: "desc" }],
          after: query.after === undefined ? undefined : [query.after],
          limit: query.limit + 1
        }),
        (rows) => ({ subscriptions: rows.slice(0, query.limit).map(subscriptionFromRow), hasMore: rows.length > query.limit })
      ),
    rotateSecret: Effect.fn("Subscriptions.rotateSecret")(function*(projectId: string, subscriptionId: string) {
      const secret = generateIngestSecret()
      yield* execute(subscriptionId, { type: "RotateIngestSecret", projectId, secretHash: secretHash(secret), at: isoTime(yield* Clock.currentTimeMillis) })
      return { subscription: yield* get(projectId, subscriptionId), secret }
    }),
    remove: Effect.fn("Subscriptions.remove")(function*(projectId: string, subscriptionId: string) {
      yield* execute(subscriptionId, { type: "DeleteSubscription", projectId, at: isoTime(yield* Clock.currentTimeMillis) }).pipe(
        Effect.catchTag("InvalidInput", () => Effect.fail(notFound()))
      )
      yield* changed(subscriptionId)
      yield* claims.release(subscriptionId)
      yield* cursors.remove(subscriptionId)
    }),
    ingestUrl: (subscriptionId, secret) => `${settings.baseUrl}/v1/ingest/${subscriptionId}/${secret}`,
    onChange: (listener) => {
      listeners.push(listener)
    }
  })
})

export const layer = Layer.effect(Subscriptions, make)
