/**
 * Handlers of the connections group. Ownership rules live here: a pinned key, or an unpinned key
 * naming a user (X-Service-User-Id), sees and deletes only that user's connections, and anything
 * outside the caller's view is 404, never 403, so that ids of other users and projects do not leak.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { InvalidInput, NotFound } from "../../domain/Errors.ts"
import { Connections, type ConnectionView } from "../../infra/connections/Connections.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { makeCursors } from "./Cursor.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"
import { actingUser } from "./Users.ts"

const notFound = () => new NotFound({ message: "No such connection." })

/** The caller's view: a pinned key's user, or the user an unpinned key names; else the whole project. */
const visible = (user: string | undefined, connection: ConnectionView | undefined): connection is ConnectionView =>
  connection !== undefined && (user === undefined || connection.userId === user)

/** A cursor belongs to one list: the project's, or one user's (as executions' and subscriptions' do). */
const cursorScope = (projectId: string, userId: string | undefined) => `connections:${projectId}:${userId ?? ""}`

export const ConnectionsHttp = HttpApiBuilder.group(Api, "connections", (handlers) =>
  Effect.gen(function*() {
    const connections = yield* Connections
    const cursors = yield* makeCursors

    /** The connection, or 404: absent, another project's, or another user's than the one acting. */
    const findVisible = Effect.fn("ConnectionsHttp.findVisible")(function*(connectionId: string, header: string | undefined) {
      const caller = yield* Caller
      const user = yield* actingUser(caller, { header })
      const connection = yield* connections.get(caller.projectId, connectionId)
      if (!visible(user, connection)) return yield* notFound()
      return connection
    })

    return handlers
      .handle("create", Effect.fn("ConnectionsHttp.create")(function*({ payload, headers }) {
        const caller = yield* Caller
        const userId = yield* actingUser(caller, { explicit: payload.userId, header: headers["x-service-user-id"] })
        if (userId === undefined) {
          return yield* new InvalidInput({ message: "Name the user: body userId or X-Service-User-Id (this key is not pinned to a user)." })
        }
        return yield* connections.create({
          projectId: caller.projectId,
          userId,
          toolkit: payload.toolkit,
          authClass: payload.authClass,
          credentials: payload.credentials,
          scopes: payload.scopes ?? [],
          expiresAt: payload.expiresAt
        })
      }))
      .handle("list", Effect.fn("ConnectionsHttp.list")(function*({ query, headers }) {
        const caller = yield* Caller
        // No user named with an unpinned key lists the whole project, as executions do.
        const userId = yield* actingUser(caller, { explicit: query.userId, header: headers["x-service-user-id"] })
        const scope = cursorScope(caller.projectId, userId)
        const position = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor)
        const first = position?.[0]
        if (position !== undefined && (position.length !== 1 || typeof first !== "string")) {
          return yield* new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })
        }
        const after = typeof first === "string" ? first : undefined
        const limit = query.limit ?? DEFAULT_LIMIT
        const page = yield* connections.list({ projectId: caller.projectId, userId, limit, after })
        const last = page.connections[page.connections.length - 1]
        return {
          connections: page.connections,
          ...(page.hasMore && last !== undefined ? { nextCursor: cursors.encode(scope, [last.connectionId]) } : {})
        }
      }))
      .handle("get", ({ params, headers }) => findVisible(params.connectionId, headers["x-service-user-id"]))
      .handle("delete", Effect.fn("ConnectionsHttp.delete")(function*({ params, headers }) {
        const caller = yield* Caller
        yield* findVisible(params.connectionId, headers["x-service-user-id"])
        yield* connections.delete(caller.projectId, params.connectionId)
      }))
  }))
