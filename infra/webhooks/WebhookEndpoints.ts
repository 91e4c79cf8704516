/**
 * Webhook endpoint commands and reads: folds the endpoint's stream, decides, appends (the inline
 * projection commits with it), and reads the `webhook_endpoints` view. Secrets are generated
 * here, sealed before they reach the log, and shown to the caller once.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import { isoTime } from "../../domain/Time.ts"
import * as Registry from "../../domain/webhooks/EndpointRegistry.ts"
import * as Endpoint from "../../domain/webhooks/WebhookEndpoint.ts"
import { SECRET_PREFIX, secretPrefixOf } from "../../domain/webhooks/WebhookSignature.ts"
import { allowPrivateNetworks } from "../outbound/OutboundHttp.ts"
import { validateUrl } from "../outbound/AddressGuard.ts"
import { handleCommand, prepare } from "../eventlog/CommandHandler.ts"
import { type AppendRequest, EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import { integer } from "../Settings.ts"
import { newId } from "../Ids.ts"
import { Secrets } from "../access/Secrets.ts"
import { makeStreamLocks } from "../eventlog/StreamLocks.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"
import { type EndpointRow, ENDPOINTS_TABLE, endpointFromRow } from "./WebhookProjections.ts"

export interface EndpointChanges {
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<string> | undefined
  readonly active?: boolean | undefined
}

export interface WebhookEndpointsShape {
  readonly create: (projectId: string, input: { readonly url: string; readonly events: ReadonlyArray<string>; readonly active: boolean }) =>
    Effect.Effect<{ readonly endpoint: EndpointRow; readonly secret: string }, InvalidInput | StoreUnavailable>
  readonly update: (projectId: string, endpointId: string, changes: EndpointChanges) =>
    Effect.Effect<EndpointRow, InvalidInput | NotFound | StoreUnavailable>
  readonly rotateSecret: (projectId: string, endpointId: string) =>
    Effect.Effect<{ readonly endpoint: EndpointRow; readonly secret: string }, NotFound | StoreUnavailable>
  readonly remove: (projectId: string, endpointId: string) => Effect.Effect<void, NotFound | StoreUnavailable>
  /** The endpoint of this project, or NotFound (absent, deleted, other project). */
  readonly get: (projectId: string, endpointId: string) => Effect.Effect<EndpointRow, NotFound | StoreUnavailable>
  /** Any endpoint by id (the delivery lanes): undefined once deleted. */
  readonly find: (endpointId: string) => Effect.Effect<EndpointRow | undefined, StoreUnavailable>
  readonly list: (projectId: string, limit: number, after: string | undefined) => Effect.Effect<ReadonlyArray<EndpointRow>, StoreUnavailable>
  /** Receives the id of every endpoint that changed, so its lane re-reads it at once. */
  readonly onChange: (listener: (endpointId: string) => void) => void
}

export class WebhookEndpoints extends Context.Service<WebhookEndpoints, WebhookEndpointsShape>()("app/infra/WebhookEndpoints") {}

const nowIso = Effect.map(Clock.currentTimeMillis, isoTime)

/** SERVICE_WEBHOOK_MAX_ENDPOINTS_PER_PROJECT: endpoints a project may have (docs/webhooks.md). */
export const maxEndpointsSetting = integer("SERVICE_WEBHOOK_MAX_ENDPOINTS_PER_PROJECT", 100, 1, 10_000)

const notFound = () => new NotFound({ message: "No such webhook endpoint." })

/** `whsec_` + 43 base64url characters (256 bits). */
export const generateSecret = (): string => `${SECRET_PREFIX}${randomBytes(32).toString("base64url")}`

export const checkEvents = (events: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, InvalidInput> => {
  if (events.length === 0) return Effect.fail(new InvalidInput({ message: "events must list at least one event type." }))
  if (new Set(events).size !== events.length) return Effect.fail(new InvalidInput({ message: "events must not repeat an entry." }))
  for (const entry of events) {
    const problem = Endpoint.subscriptionProblem(entry)
    if (problem !== undefined) return Effect.fail(new InvalidInput({ message: `events: ${problem}.` }))
  }
  return Effect.succeed(events)
}

export const make = Effect.gen(function*() {
  const store = yield* EventStore
  const views = yield* ViewStore
  const secrets = yield* Secrets
  const allowPrivate = yield* allowPrivateNetworks
  const maxEndpoints = yield* maxEndpointsSetting
  const listeners: Array<(endpointId: string) => void> = []
  const changed = (endpointId: string) => Effect.sync(() => listeners.forEach((listener) => listener(endpointId)))

  const checkUrl = (raw: string) =>
    validateUrl(raw, {
      allowPrivateNetworks: allowPrivate,
      requireHttps: true,
      privateNetworksHint: "a receiver on a private network or this machine is for development, allowed when the service runs with SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true"
    }).pipe(
      Effect.map(Endpoint.normalizeUrl)
    )

  const find = (endpointId: string) => Effect.map(views.get(ENDPOINTS_TABLE, { endpoint_id: endpointId }), (row) => (row === undefined ? undefined : endpointFromRow(row)))

  const get = (projectId: string, endpointId: string) =>
    Effect.flatMap(find(endpointId), (endpoint) =>
      endpoint === undefined || endpoint.projectId !== projectId ? Effect.fail(notFound()) : Effect.succeed(endpoint))

  /** The project's endpoints as the view has them: the count a registry starts from. */
  const existingIds = (projectId: string) =>
    Effect.map(
      views.list(ENDPOINTS_TABLE, {
        where: [{ column: "project_id", op: "=", value: projectId }],
        orderBy: [{ column: "endpoint_id", direction: "asc" }],
        limit: 10_001
      }),
      (rows) => rows.map((row) => String(row.endpoint_id))
    )

  /** The registry's decision, committed with the endpoint's own (EndpointRegistry.ts). */
  const inRegistry = (projectId: string, command: Registry.RegistryCommand) =>
    prepare(store, Registry.registryDecider, Registry.registryStreamId(projectId), command).pipe(
      Effect.map((prepared) => (prepared.events.length === 0 ? [] : [prepared.request])),
      Effect.catchIf(
        (rejection): rejection is Registry.EndpointLimitReached => "_tag" in rejection && rejection._tag === "EndpointLimitReached",
        (limit) => Effect.fail(new InvalidInput({ message: `A project has at most ${limit.cap} webhook endpoints; delete one first.` }))
      )
    )

  const locks = makeStreamLocks()

  /**
   * Runs a command on the endpoint's stream (infra/eventlog/CommandHandler.ts), one at a time per
   * stream in this process (the project's registry too, when the command changes it); a refusal
   * is NotFound.
   */
  const execute = <E = never>(
    endpointId: string,
    command: Endpoint.EndpointCommand,
    alongside?: { readonly projectId: string; readonly appends: Effect.Effect<ReadonlyArray<AppendRequest>, E | StoreUnavailable> }
  ) => {
    const streamId = Endpoint.endpointStreamId(endpointId)
    const streams = alongside === undefined ? [streamId] : [streamId, Registry.registryStreamId(alongside.projectId)]
    return locks(streams, handleCommand(store, Endpoint.endpointDecider, streamId, command, { alongside: alongside?.appends })).pipe(
      Effect.catchIf(
        (error): error is Endpoint.EndpointRejection => typeof error === "object" && error !== null && "_tag" in error &&
          (error._tag === "EndpointNotFound" || error._tag === "EndpointExists"),
        () => Effect.fail(notFound())
      ),
      Effect.andThen(changed(endpointId))
    )
  }

  return WebhookEndpoints.of({
    create: Effect.fnUntraced(function*(projectId, input) {
      const url = yield* checkUrl(input.url)
      const events = yield* checkEvents(input.events)
      const secret = generateSecret()
      const endpointId = newId("whe")
      const existing = yield* existingIds(projectId)
      const register = inRegistry(projectId, { type: "Register", endpointId, cap: maxEndpoints, existing })
      yield* execute(endpointId, {
        type: "CreateEndpoint",
        endpoint: {
          endpointId,
          projectId,
          url,
          events,
          active: input.active,
          sealedSecret: secrets.seal(secret),
          secretPrefix: secretPrefixOf(secret),
          at: yield* nowIso
        }
      }, { projectId, appends: register }).pipe(Effect.catchTag("NotFound", () => Effect.die(new Error("new endpoint id collided"))))
      const endpoint = yield* get(projectId, endpointId).pipe(Effect.orDie)
      return { endpoint, secret }
    }),
    update: Effect.fnUntraced(function*(projectId, endpointId, changes) {
      yield* get(projectId, endpointId)
      const url = changes.url === undefined ? undefined : yield* checkUrl(changes.url)
      const events = changes.events === undefined ? undefined : yield* checkEvents(changes.events)
      yield* execute(endpointId, {
        type: "UpdateEndpoint",
        projectId,
        changes: {
          ...(url !== undefined ? { url } : {}),
          ...(events !== undefined ? { events } : {}),
          ...(changes.active !== undefined ? { active: changes.active } : {})
        },
        at: yield* nowIso
      })
      return yield* get(projectId, endpointId)
    }),
    rotateSecret: Effect.fnUntraced(function*(projectId, endpointId) {
      const secret = generateSecret()
      yield* execute(endpointId, {
        type: "RotateEndpointSecret",
        projectId,
        sealedSecret: secrets.seal(secret),
        secretPrefix: secretPrefixOf(secret),
        at: yield* nowIso
      })
      return { endpoint: yield* get(projectId, endpointId), secret }
    }),
    remove: Effect.fnUntraced(function*(projectId, endpointId) {
      // Its place in the registry is freed in the same commit.
      const unregister = inRegistry(projectId, { type: "Unregister", endpointId }).pipe(Effect.catchTag("InvalidInput", Effect.die))
      yield* execute(endpointId, { type: "DeleteEndpoint", projectId, at: yield* nowIso }, { projectId, appends: unregister })
    }),
    get,
    find,
    // Newest first, as every list (ids begin with their creation time).
    list: (projectId, limit, after) =>
      Effect.map(
        views.list(ENDPOINTS_TABLE, {
          where: [{ column: "project_id", op: "=", value: projectId }],
          orderBy: [{ column: "endpoint_id", direction: "desc" }],
          after: after === undefined ? undefined : [after],
          limit
        }),
        (rows) => rows.map(endpointFromRow)
      ),
    onChange: (listener) => {
      listeners.push(listener)
    }
  })
})

export const layer = Layer.effect(WebhookEndpoints, make)
