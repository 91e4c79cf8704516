/**
 * Handler of the trigger event history (spec, "Trigger event history"): unpinned keys only, no
 * user override; exact filters by subscription and trigger; MAC-bound cursors scoped to the
 * project and the filters, whose anchor must still exist (a swept anchor is 422: restart from the
 * first page).
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { findTrigger } from "../../domain/catalog/index.ts"
import { InvalidInput } from "../../domain/Errors.ts"
import { TriggerHistory } from "../../infra/triggers/TriggerHistory.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"
import { makeCursors } from "./Cursor.ts"
import { storeFailuresAsDefects } from "./StoreDefects.ts"

const SUBSCRIPTION_ID = /^trgsub_[0-9a-z]{32}$/
const badCursor = () => new InvalidInput({ message: "The cursor is malformed, does not belong to this list, or its position was swept; restart from the first page." })

export const TriggerEventsHttp = HttpApiBuilder.group(Api, "triggerEvents", (handlers) =>
  Effect.gen(function*() {
    const history = yield* TriggerHistory
    const cursors = yield* makeCursors
    return handlers.handle("list", Effect.fnUntraced(function*({ query }) {
      const caller = yield* Caller
      if (query.subscriptionId !== undefined && !SUBSCRIPTION_ID.test(query.subscriptionId)) {
        return yield* new InvalidInput({ message: "subscriptionId must be a trgsub_ id." })
      }
      if (query.trigger !== undefined && findTrigger(query.trigger)?.name !== query.trigger) {
        return yield* new InvalidInput({ message: "trigger must be a catalog trigger's canonical name, <toolkit>.<name>." })
      }
      const scope = `trigger-events:${caller.projectId}:${query.subscriptionId ?? ""}:${query.trigger ?? ""}`
      const position = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor).pipe(Effect.mapError(badCursor))
      let after: readonly [string, string] | undefined
      if (position !== undefined) {
        const [receivedAt, arrivalId] = position
        if (position.length !== 2 || typeof receivedAt !== "string" || typeof arrivalId !== "string") return yield* badCursor()
        if (!(yield* history.exists(caller.projectId, arrivalId))) return yield* badCursor()
        after = [receivedAt, arrivalId]
      }
      const limit = query.limit ?? DEFAULT_LIMIT
      const page = yield* history.list({ projectId: caller.projectId, subscriptionId: query.subscriptionId, trigger: query.trigger, limit, after })
      const last = page.rows[page.rows.length - 1]
      return {
        triggerEvents: page.rows,
        ...(page.hasMore && last !== undefined ? { nextCursor: cursors.encode(scope, [last.receivedAt, last.arrivalId]) } : {})
      }
    }, storeFailuresAsDefects))
  }))
