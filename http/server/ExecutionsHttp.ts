/**
 * Handlers of the executions group: who acts (decisions.md section 3), then the Executions
 * service. Execute answers 200 with a terminal record (sync), or 202 with the current one and a
 * `Location` to poll (async, always; sync, when the wait ends first).
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { InvalidInput } from "../../domain/Errors.ts"
import { Executions } from "../../infra/executions/Executions.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { makeCursors } from "./Cursor.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"
import { actingUser } from "./Users.ts"
import { toCanonicalName } from "../../domain/catalog/index.ts"

export const ExecutionsHttp = HttpApiBuilder.group(Api, "executions", (handlers) =>
  Effect.gen(function*() {
    const executions = yield* Executions
    const cursors = yield* makeCursors
    return handlers
      // Handlers are made once with `fnUntraced` (README, "Writing effects").
      .handle("execute", Effect.fnUntraced(function*({ headers, payload }) {
        const caller = yield* Caller
        const headerKey = headers["idempotency-key"]
        if (payload.idempotencyKey !== undefined && headerKey !== undefined) {
          return yield* new InvalidInput({ message: "Give the idempotency key in the body or the Idempotency-Key header, not both." })
        }
        const userId = yield* actingUser(caller, { explicit: payload.userId, header: headers["x-service-user-id"] })
        if (userId === undefined) {
          return yield* new InvalidInput({ message: "userId is required (body, X-Service-User-Id, or a user-pinned key)." })
        }
        const { record, terminal } = yield* executions.execute({
          projectId: caller.projectId,
          userId,
          tool: payload.tool,
          input: payload.input,
          mode: payload.mode,
          connectionId: payload.connectionId,
          attachments: payload.attachments,
          idempotencyKey: payload.idempotencyKey ?? headerKey
        })
        // An async request is 202 with Location, a replay of a finished one too (decisions.md
        // section 3: a replay answers like a fresh request of its own mode).
        return terminal && payload.mode !== "async"
          ? HttpServerResponse.jsonUnsafe(record, { status: 200 })
          : HttpServerResponse.jsonUnsafe(record, {
            status: 202,
            headers: { location: `/v1/executions/${record.executionId}` }
          })
      }))
      .handle("list", Effect.fnUntraced(function*({ headers, query }) {
        const caller = yield* Caller
        const userId = yield* actingUser(caller, { explicit: query.userId, header: headers["x-service-user-id"] })
        // A cursor pages the list it came from: its user, status and tool are part of its scope,
        // the tool by its canonical name (its wire name filters the same list).
        const tool = query.tool === undefined ? "" : (toCanonicalName(query.tool) ?? query.tool)
        const scope = `executions:${caller.projectId}:${userId ?? ""}:${query.status ?? ""}:${tool}`
        let after: string | undefined
        if (query.cursor !== undefined) {
          const position = yield* cursors.decode(scope, query.cursor)
          const [id] = position
          if (position.length !== 1 || typeof id !== "string") {
            return yield* new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })
          }
          after = id
        }
        const limit = query.limit ?? DEFAULT_LIMIT
        const page = yield* executions.list({
          projectId: caller.projectId,
          userId,
          status: query.status,
          tool: query.tool,
          after,
          limit
        })
        const last = page.executions[page.executions.length - 1]
        return {
          executions: page.executions,
          ...(page.more && last !== undefined ? { nextCursor: cursors.encode(scope, [last.executionId]) } : {})
        }
      }))
      // A pinned key, or an unpinned key naming a user, sees only that user's executions (404
      // otherwise, as for connections and subscriptions).
      .handle("get", Effect.fnUntraced(function*({ headers, params }) {
        const caller = yield* Caller
        const userId = yield* actingUser(caller, { header: headers["x-service-user-id"] })
        return yield* executions.get(caller.projectId, userId, params.executionId)
      }))
      .handle("cancel", Effect.fnUntraced(function*({ headers, params }) {
        const caller = yield* Caller
        const userId = yield* actingUser(caller, { header: headers["x-service-user-id"] })
        return yield* executions.cancel(caller.projectId, userId, params.executionId)
      }))
  }))
