/**
 * Webhook endpoint commands and reads: folds the endpoint's stream, decides, appends (the inline
 * projection commits with it), and reads the `webhook_endpoints` view. Secrets are generated
 * here, sealed before they reach the log, and shown to the caller once.
 */
import { Context, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import * as Endpoint from "../../domain/webhooks/WebhookEndpoint.ts"
import { SECRET_PREFIX, secretPrefixOf } from "../../domain/webhooks/WebhookSignature.ts"
import { allowPrivateNetworks } from "../outbound/OutboundHttp.ts"
import { validateUrl } from "../outbound/AddressGuard.ts"
import { ConcurrencyConflict, EventStore, type StoreUnavailable } from "../eventlog/EventStore.ts"
import { newId } from "../Ids.ts"
import { Secrets } from "../access/Secrets.ts"
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

const now = () => new Date().toISOString()

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
  const listeners: Array<(endpointId: string) => void> = []
  const changed = (endpointId: string) => Effect.sync(() => listeners.forEach((listener) => listener(endpointId)))

  const checkUrl = (raw: string) =>
    validateUrl(raw, { allowPrivateNetworks: allowPrivate, requireHttps: true }).pipe(
      Effect.map(Endpoint.normalizeUrl)
    )

  const find = (endpointId: string) => Effect.map(views.get(ENDPOINTS_TABLE, { endpoint_id: endpointId }), (row) => (row === undefined ? undefined : endpointFromRow(row)))

  const get = (projectId: string, endpointId: string) =>
    Effect.flatMap(find(endpointId), (endpoint) =>
      endpoint === undefined || endpoint.projectId !== projectId ? Effect.fail(notFound()) : Effect.succeed(endpoint))

  /** Folds, decides, appends; a concurrent writer makes it start over. */
  const execute = Effect.fnUntraced(function*(
    projectId: string,
    endpointId: string,
    command: Endpoint.EndpointCommand
  ): Effect.fn.Return<void, NotFound | StoreUnavailable | ConcurrencyConflict> {
    const streamId = Endpoint.endpointStreamId(endpointId)
    const recorded = yield* store.readStream(streamId)
    const state = Endpoint.fold(recorded.map(Endpoint.endpointCodec.decode))
    if (command.type !== "CreateEndpoint" && (state === undefined || state.projectId !== projectId)) return yield* notFound()
    const decision = Endpoint.decide(command, state)
    if (!Array.isArray(decision)) return yield* notFound()
    const events = decision as ReadonlyArray<Endpoint.EndpointEvent>
    yield* store.append([{
      streamId,
      streamType: Endpoint.ENDPOINT_STREAM_TYPE,
      expectedVersion: recorded.length,
      events: events.map((event) => Endpoint.endpointCodec.encode(event, newId("evt")))
    }])
  }, (effect, _projectId, endpointId) =>
    effect.pipe(
      Effect.retry({ while: (error) => error instanceof ConcurrencyConflict, times: 5 }),
      Effect.catchTag("ConcurrencyConflict", () => Effect.die(new Error("endpoint stream kept moving"))),
      Effect.andThen(changed(endpointId))
    ))

  return WebhookEndpoints.of({
    create: Effect.fnUntraced(function*(projectId, input) {
      const url = yield* checkUrl(input.url)
      const events = yield* checkEvents(input.events)
      const secret = generateSecret()
      const endpointId = newId("whe")
      yield* execute(projectId, endpointId, {
        type: "CreateEndpoint",
        endpoint: {
          endpointId,
          projectId,
          url,
          events,
          active: input.active,
          sealedSecret: secrets.seal(secret),
          secretPrefix: secretPrefixOf(secret),
          at: now()
        }
      }).pipe(Effect.catchTag("NotFound", () => Effect.die(new Error("new endpoint id collided"))))
      const endpoint = yield* get(projectId, endpointId).pipe(Effect.orDie)
      return { endpoint, secret }
    }),
    update: Effect.fnUntraced(function*(projectId, endpointId, changes) {
      yield* get(projectId, endpointId)
      const url = changes.url === undefined ? undefined : yield* checkUrl(changes.url)
      const events = changes.events === undefined ? undefined : yield* checkEvents(changes.events)
      yield* execute(projectId, endpointId, {
        type: "UpdateEndpoint",
        changes: {
          ...(url !== undefined ? { url } : {}),
          ...(events !== undefined ? { events } : {}),
          ...(changes.active !== undefined ? { active: changes.active } : {})
        },
        at: now()
      })
      return yield* get(projectId, endpointId)
    }),
    rotateSecret: Effect.fnUntraced(function*(projectId, endpointId) {
      const secret = generateSecret()
      yield* execute(projectId, endpointId, {
        type: "RotateEndpointSecret",
        sealedSecret: secrets.seal(secret),
        secretPrefix: secretPrefixOf(secret),
        at: now()
      })
      return { endpoint: yield* get(projectId, endpointId), secret }
    }),
    remove: (projectId, endpointId) => execute(projectId, endpointId, { type: "DeleteEndpoint", at: now() }),
    get,
    find,
    list: (projectId, limit, after) =>
      Effect.map(
        views.list(ENDPOINTS_TABLE, {
          where: [{ column: "project_id", op: "=", value: projectId }],
          orderBy: [{ column: "endpoint_id", direction: "asc" }],
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
