/**
 * Connections: user-scoped provider credentials. Facts go to the event log (`connection-<id>`,
 * credentials sealed under SERVICE_SECRET_KEY), reads come from the inline `connections` view.
 * `resolve` is what the executor calls before dispatch: it picks the connection a tool runs
 * with and opens its credentials, which never leave this process in plain text otherwise.
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import type { AuthClass } from "../../domain/catalog/Catalog.ts"
import { findToolkit, listToolkits } from "../../domain/catalog/index.ts"
import {
  CONNECTION_STREAM_TYPE,
  connectionCodec,
  type ConnectionCreated,
  type ConnectionDeleted,
  connectionStreamId,
  credentialProblem,
  isExpired,
  missingScopes,
  needsConnection,
  parseExpiry
} from "../../domain/Connection.ts"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import { TABLE } from "./ConnectionsProjection.ts"
import { EventStore } from "../eventlog/EventStore.ts"
import { newId } from "../Ids.ts"
import type { Row } from "../eventlog/Projection.ts"
import { Secrets } from "../access/Secrets.ts"
import type { ConnectionRequest, ResolvedConnection } from "../executions/ExecutionPorts.ts"
import { ViewStore } from "../eventlog/ViewStore.ts"

/** The public form: never the credentials. */
export interface ConnectionView {
  readonly connectionId: string
  readonly userId: string
  readonly toolkit: string
  readonly authClass: AuthClass
  readonly scopes: ReadonlyArray<string>
  readonly expiresAt?: string
  readonly createdAt: string
}

export interface CreateConnectionInput {
  readonly projectId: string
  readonly userId: string
  readonly toolkit: string
  readonly authClass: AuthClass
  readonly credentials: Readonly<Record<string, string>>
  readonly scopes: ReadonlyArray<string>
  readonly expiresAt?: string | undefined
}

export interface ListConnectionsQuery {
  readonly projectId: string
  readonly userId?: string | undefined
  readonly limit: number
  /** The connectionId of the last item of the previous page. */
  readonly after?: string | undefined
}

/** What the executor asks before dispatch, and what it gets: the port in ExecutionPorts.ts. */
export type ResolveRequest = ConnectionRequest
export type { ResolvedConnection }

export interface ConnectionsShape {
  readonly create: (input: CreateConnectionInput) => Effect.Effect<ConnectionView, InvalidInput>
  /** The connection if it exists in this project; ownership by user is the caller's check. */
  readonly get: (projectId: string, connectionId: string) => Effect.Effect<ConnectionView | undefined>
  /** Newest first; one more than `limit` is never fetched, `hasMore` says whether a page follows. */
  readonly list: (query: ListConnectionsQuery) => Effect.Effect<{ readonly connections: ReadonlyArray<ConnectionView>; readonly hasMore: boolean }>
  readonly delete: (projectId: string, connectionId: string) => Effect.Effect<void, NotFound>
  readonly resolve: (request: ResolveRequest) => Effect.Effect<ResolvedConnection, InvalidInput>
}

export class Connections extends Context.Service<Connections, ConnectionsShape>()("app/infra/Connections") {}

const AUTH_CLASSES: ReadonlyArray<AuthClass> = ["none", "api_key", "bearer", "oauth2"]

const str = (row: Row, column: string): string => {
  const value = row[column]
  return typeof value === "string" ? value : ""
}

const toView = (row: Row): ConnectionView => {
  const authClass = AUTH_CLASSES.find((c) => c === row.authClass) ?? "none"
  const scopes = Array.isArray(row.scopes) ? row.scopes.filter((s): s is string => typeof s === "string") : []
  const expiresAt = row.expiresAt
  return {
    connectionId: str(row, "connectionId"),
    userId: str(row, "userId"),
    toolkit: str(row, "toolkit"),
    authClass,
    scopes,
    ...(typeof expiresAt === "string" ? { expiresAt } : {}),
    createdAt: str(row, "createdAt")
  }
}

const invalid = (message: string) => new InvalidInput({ message })

const isStringRecord = (value: unknown): value is Record<string, string> =>
  value !== null && typeof value === "object" && !Array.isArray(value) &&
  Object.values(value).every((v) => typeof v === "string")

/** An unknown toolkit's refusal names the catalog's toolkits. */
const unknownToolkit = (name: string) =>
  `Unknown toolkit ${JSON.stringify(name)}; the catalog's toolkits are ${listToolkits().map((toolkit) => toolkit.name).join(", ")}.`

export const make = Effect.gen(function*() {
  const events = yield* EventStore
  const views = yield* ViewStore
  const secrets = yield* Secrets

  // Store faults are not the caller's doing: they become defects, answered as 500 at the edge.
  const getRow = (connectionId: string) => Effect.orDie(views.get(TABLE, { connectionId }))

  const create = Effect.fn("Connections.create")(function*(input: CreateConnectionInput) {
    const toolkit = findToolkit(input.toolkit)
    if (toolkit === undefined) return yield* invalid(unknownToolkit(input.toolkit))
    if (!toolkit.authClasses.includes(input.authClass)) {
      return yield* invalid(`Toolkit ${toolkit.name} accepts auth classes ${toolkit.authClasses.join(", ")}, not ${input.authClass}.`)
    }
    const problem = credentialProblem(input.authClass, input.credentials)
    if (problem !== undefined) return yield* invalid(problem)
    const now = yield* Clock.currentTimeMillis
    let expiresAt: string | undefined
    if (input.expiresAt !== undefined) {
      const parsed = parseExpiry(input.expiresAt, now)
      if (!parsed.ok) return yield* invalid(parsed.message)
      expiresAt = parsed.expiresAt
    }
    const connectionId = newId("conn")
    const scopes = [...new Set(input.scopes)]
    const created: ConnectionCreated = {
      type: "ConnectionCreated",
      connectionId,
      projectId: input.projectId,
      userId: input.userId,
      toolkit: toolkit.name,
      authClass: input.authClass,
      scopes,
      ...(expiresAt !== undefined ? { expiresAt } : {}),
      createdAt: new Date(now).toISOString(),
      credentials: secrets.seal(JSON.stringify(input.credentials))
    }
    yield* Effect.orDie(events.append([{
      streamId: connectionStreamId(connectionId),
      streamType: CONNECTION_STREAM_TYPE,
      expectedVersion: 0,
      events: [connectionCodec.encode(created, newId("evt"))]
    }]))
    const { type: _type, credentials: _sealed, projectId: _project, ...view } = created
    return { ...view, authClass: input.authClass } satisfies ConnectionView
  })

  const get = (projectId: string, connectionId: string) =>
    Effect.map(getRow(connectionId), (row) => (row === undefined || row.projectId !== projectId ? undefined : toView(row)))

  const list = (query: ListConnectionsQuery) =>
    Effect.map(
      Effect.orDie(views.list(TABLE, {
        where: [
          { column: "projectId", op: "=", value: query.projectId },
          ...(query.userId !== undefined ? [{ column: "userId", op: "=" as const, value: query.userId }] : [])
        ],
        orderBy: [{ column: "connectionId", direction: "desc" }],
        after: query.after === undefined ? undefined : [query.after],
        limit: query.limit + 1
      })),
      (rows) => ({ connections: rows.slice(0, query.limit).map(toView), hasMore: rows.length > query.limit })
    )

  const remove = Effect.fn("Connections.delete")(function*(projectId: string, connectionId: string) {
    const notFound = new NotFound({ message: "No such connection." })
    const row = yield* getRow(connectionId)
    if (row === undefined || row.projectId !== projectId) return yield* notFound
    const now = yield* Clock.currentTimeMillis
    const deleted: ConnectionDeleted = { type: "ConnectionDeleted", connectionId, projectId, deletedAt: new Date(now).toISOString() }
    // Created is version 1; a concurrent delete that won the race leaves nothing to delete.
    yield* events.append([{
      streamId: connectionStreamId(connectionId),
      streamType: CONNECTION_STREAM_TYPE,
      expectedVersion: 1,
      events: [connectionCodec.encode(deleted, newId("evt"))]
    }]).pipe(
      Effect.catchTag("ConcurrencyConflict", () => Effect.fail(notFound)),
      Effect.catchTag("StoreUnavailable", Effect.die)
    )
  })

  const pick = Effect.fnUntraced(function*(request: ResolveRequest) {
    if (request.connectionId !== undefined) {
      const row = yield* getRow(request.connectionId)
      if (row === undefined || row.projectId !== request.projectId || row.userId !== request.userId) {
        return yield* invalid(`Connection ${request.connectionId} does not exist for user ${request.userId}.`)
      }
      if (row.toolkit !== request.toolkit) {
        return yield* invalid(`Connection ${request.connectionId} is for toolkit ${str(row, "toolkit")}, not ${request.toolkit}.`)
      }
      return row
    }
    const rows = yield* Effect.orDie(views.list(TABLE, {
      where: [
        { column: "projectId", op: "=", value: request.projectId },
        { column: "userId", op: "=", value: request.userId },
        { column: "toolkit", op: "=", value: request.toolkit }
      ],
      orderBy: [{ column: "connectionId", direction: "desc" }],
      limit: 2
    }))
    const [only, second] = rows
    if (only === undefined) return yield* invalid(`User ${request.userId} has no connection for toolkit ${request.toolkit}.`)
    if (second !== undefined) {
      return yield* invalid(`User ${request.userId} has several connections for toolkit ${request.toolkit}; name one with connectionId.`)
    }
    return only
  })

  // Untraced: it runs on every execution, and a span costs more than the lookup itself.
  const resolve = Effect.fnUntraced(function*(request: ResolveRequest) {
    const toolkit = findToolkit(request.toolkit)
    if (toolkit === undefined) return yield* invalid(unknownToolkit(request.toolkit))
    if (!needsConnection(toolkit)) {
      // Nothing to open; a named connection is still checked, so a wrong id is not silently dropped.
      if (request.connectionId === undefined) return {}
      const named = yield* pick(request)
      return { connectionId: str(named, "connectionId") }
    }
    const row = yield* pick(request)
    const connection = toView(row)
    if (isExpired(connection.expiresAt, yield* Clock.currentTimeMillis)) return yield* invalid("connection expired")
    const missing = missingScopes(connection.scopes, request.scopes)
    if (missing.length > 0) {
      return yield* invalid(`Connection ${connection.connectionId} lacks the scopes ${missing.join(", ")}.`)
    }
    const opened = secrets.open(str(row, "credentials"))
    const credentials: unknown = opened === undefined ? undefined : JSON.parse(opened)
    if (!isStringRecord(credentials)) {
      return yield* invalid(`The credentials of connection ${connection.connectionId} cannot be opened with this service's secret key.`)
    }
    return { connectionId: connection.connectionId, credentials: Redacted.make(credentials) }
  })

  return Connections.of({ create, get, list, delete: remove, resolve })
})

export const layer: Layer.Layer<Connections, never, EventStore | ViewStore | Secrets> = Layer.effect(Connections, make)
