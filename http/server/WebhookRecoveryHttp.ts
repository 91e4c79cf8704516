/**
 * Handlers of the webhook recovery extension (decisions.md section 9): resend one delivery, or
 * recover every failed one since a time. Unpinned keys only, like every webhook route.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { WebhookRecovery } from "../../infra/webhooks/WebhookRecovery.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { storeFailuresAsDefects } from "./StoreDefects.ts"

const projectCaller = Effect.gen(function*() {
  const caller = yield* Caller
  return caller.projectId
})

export const WebhookRecoveryHttp = HttpApiBuilder.group(Api, "webhookRecovery", (handlers) =>
  Effect.gen(function*() {
    const recovery = yield* WebhookRecovery
    return handlers
      .handle("resend", Effect.fnUntraced(function*({ params }) {
        const projectId = yield* projectCaller
        return yield* recovery.resend(projectId, params.endpointId, params.deliveryId)
      }, storeFailuresAsDefects))
      .handle("recover", Effect.fnUntraced(function*({ params, payload }) {
        const projectId = yield* projectCaller
        return { count: yield* recovery.recover(projectId, params.endpointId, Date.parse(payload.since)) }
      }, storeFailuresAsDefects))
  }))
