/**
 * Which endpoints a project's events go to, as the dispatcher sees them: a cache of the
 * `webhook_endpoints` view per project, kept current by the log the dispatcher follows. Every
 * endpoint change is an event in that log, so the dispatcher meets it before any event that comes
 * after it in feed order and drops the project's entry; the next event of the project reads the
 * view again, which by then shows the change (the view commits with the event). Events of a
 * project without endpoints thus cost no query at all once its (empty) entry is cached.
 *
 * The cache holds every endpoint of a cached project, active or not, so that an event naming an
 * endpoint (update, rotate, delete) finds its project; an endpoint unknown to the cache belongs to
 * no cached project. One instance per dispatcher run: a new dispatcher starts empty.
 */
import { Effect } from "effect"
import { ENDPOINT_STREAM_TYPE, endpointCodec, subscribes } from "../../domain/webhooks/WebhookEndpoint.ts"
import type { RecordedEvent, StoreUnavailable } from "../eventlog/EventStore.ts"
import type { ViewStoreShape } from "../eventlog/ViewStore.ts"
import { endpointFromRow, type EndpointRow, ENDPOINTS_TABLE } from "./WebhookProjections.ts"

/** Cached projects before the cache starts over (each entry is one small query to rebuild). */
const MAX_PROJECTS = 10_000
/** Endpoints read per query; a project with more is read in pages, so none is ever left out. */
const PAGE = 1_000

export interface SubscriptionIndex {
  /** Takes note of a followed event; call it for every event, in feed order. */
  readonly observe: (event: RecordedEvent) => void
  /** The project's active endpoints subscribed to `type`, as of every event observed so far. */
  readonly subscribers: (projectId: string, type: string) => Effect.Effect<ReadonlyArray<EndpointRow>, StoreUnavailable>
  /** Projects whose endpoints are cached (tests). */
  readonly cachedProjects: () => ReadonlyArray<string>
}

const select = (endpoints: ReadonlyArray<EndpointRow>, type: string) =>
  endpoints.filter((endpoint) => endpoint.active && subscribes(endpoint.events, type))

export const makeSubscriptionIndex = (views: ViewStoreShape): SubscriptionIndex => {
  const byProject = new Map<string, ReadonlyArray<EndpointRow>>()
  const projectOf = new Map<string, string>()

  const forget = (projectId: string) => {
    for (const endpoint of byProject.get(projectId) ?? []) projectOf.delete(endpoint.endpointId)
    byProject.delete(projectId)
  }

  const readAll = Effect.fnUntraced(function*(projectId: string) {
    const endpoints: Array<EndpointRow> = []
    while (true) {
      const last = endpoints.at(-1)
      const rows = yield* views.list(ENDPOINTS_TABLE, {
        where: [{ column: "project_id", op: "=", value: projectId }],
        orderBy: [{ column: "endpoint_id", direction: "asc" }],
        after: last === undefined ? undefined : [last.endpointId],
        limit: PAGE
      })
      endpoints.push(...rows.map(endpointFromRow))
      if (rows.length < PAGE) return endpoints
    }
  })

  const load = (projectId: string) =>
    readAll(projectId).pipe(Effect.map((endpoints) => {
      if (byProject.size >= MAX_PROJECTS) {
        byProject.clear()
        projectOf.clear()
      }
      byProject.set(projectId, endpoints)
      for (const endpoint of endpoints) projectOf.set(endpoint.endpointId, projectId)
      return endpoints
    }))

  return {
    observe: (event) => {
      if (event.streamType !== ENDPOINT_STREAM_TYPE) return
      const data = endpointCodec.decode(event)
      if (data.type === "EndpointCreated") return forget(data.projectId)
      const projectId = projectOf.get(event.streamId.slice(ENDPOINT_STREAM_TYPE.length + 1))
      if (projectId !== undefined) forget(projectId)
    },
    subscribers: (projectId, type) => {
      const cached = byProject.get(projectId)
      return cached !== undefined ? Effect.succeed(select(cached, type)) : Effect.map(load(projectId), (endpoints) => select(endpoints, type))
    },
    cachedProjects: () => [...byProject.keys()]
  }
}
