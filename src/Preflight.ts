/**
 * Every variable of decisions.md section 1, read and validated before anything starts: a bad
 * value stops the process with one line naming it, before a database or a port is touched.
 * Each feature still reads its own variables where it uses them; this only reads them all
 * first, so that the first failure a user sees is their typo, not a connection error.
 */
import { Effect } from "effect"
import { bootstrapKeys, rateLimits, secretKey } from "../infra/access/AccessSettings.ts"
import { leaseTimings } from "../infra/actors/Runner.ts"
import { syncWaitSetting } from "../infra/executions/Executions.ts"
import { fileSettings } from "../infra/files/StagedFiles.ts"
import { allowPrivateNetworks } from "../infra/outbound/OutboundHttp.ts"
import { providerUrls } from "../infra/providers/index.ts"
import { databaseUrl, httpUrl, integer, oneOf, optionalId } from "../infra/Settings.ts"
import { maxEndpointsSetting } from "../infra/webhooks/WebhookEndpoints.ts"
import { webhookSettings } from "../infra/webhooks/WebhookSettings.ts"
import { portSetting, serverLimits } from "../http/server/Server.ts"

export const preflight = Effect.gen(function*() {
  const port = yield* portSetting
  yield* serverLimits
  yield* httpUrl("SERVICE_BASE_URL", `http://localhost:${port}`)
  const url = yield* databaseUrl
  yield* secretKey(url !== undefined)
  yield* bootstrapKeys
  yield* rateLimits
  yield* fileSettings
  yield* webhookSettings
  yield* maxEndpointsSetting
  yield* allowPrivateNetworks
  yield* providerUrls
  yield* syncWaitSetting
  yield* leaseTimings
  yield* optionalId("SERVICE_USER_ID")
  yield* integer("SERVICE_TRIGGER_MIN_POLL_SECONDS", 30, 1, 86_400)
  yield* oneOf("SERVICE_MCP_TOOLS", ["catalog", "search"], "catalog")
})
