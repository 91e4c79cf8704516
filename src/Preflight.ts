/**
 * Every variable of decisions.md section 1, read and validated before anything starts: a bad
 * value stops the process with one line naming it, before a database or a port is touched.
 * Each feature still reads its own variables where it uses them; this only reads them all
 * first, so that the first failure a user sees is their typo, not a connection error.
 */
import { Effect } from "effect"
import { bootstrapKeys, previousSecretKey, rateLimits, secretKey } from "../infra/access/AccessSettings.ts"
import { storeTimeoutSetting } from "../infra/eventlog/Database.ts"
import { retentionSetting } from "../infra/eventlog/MemoryRetention.ts"
import { heldWarnSetting } from "../infra/observability/FeedWatch.ts"
import { logFormat } from "../infra/observability/Logging.ts"
import { readySettings } from "../infra/observability/Readiness.ts"
import { telemetrySettings } from "../infra/observability/Telemetry.ts"
import { leaseTimings } from "../infra/actors/Runner.ts"
import { syncWaitSetting } from "../infra/executions/Executions.ts"
import { fileSettings } from "../infra/files/StagedFiles.ts"
import { allowPrivateNetworks } from "../infra/outbound/OutboundHttp.ts"
import { providerUrls } from "../infra/providers/index.ts"
import { databaseUrl, httpUrl, optionalId } from "../infra/Settings.ts"
import { maxEndpointsSetting } from "../infra/webhooks/WebhookEndpoints.ts"
import { webhookSettings } from "../infra/webhooks/WebhookSettings.ts"
import { ingestBudget, triggerSettings } from "../infra/triggers/TriggerSettings.ts"
import { endOfTurnSetting, portSetting, serverLimits } from "../http/server/Server.ts"
import { mcpSettings } from "../mcp/McpSettings.ts"

export const preflight = Effect.gen(function*() {
  const port = yield* portSetting
  yield* serverLimits
  yield* httpUrl("SERVICE_BASE_URL", `http://localhost:${port}`)
  const url = yield* databaseUrl
  yield* storeTimeoutSetting
  yield* heldWarnSetting
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
  yield* triggerSettings
  yield* ingestBudget
  yield* mcpSettings
  yield* previousSecretKey
  yield* logFormat
  yield* telemetrySettings
  yield* readySettings
  yield* retentionSetting
  yield* endOfTurnSetting
})
