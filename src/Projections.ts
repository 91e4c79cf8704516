/** Every projection the service runs; features add theirs here. */
import { connectionsProjection } from "../infra/connections/ConnectionsProjection.ts"
import { executionsProjection } from "../infra/executions/ExecutionsProjection.ts"
import type { Projection } from "../infra/eventlog/Projection.ts"
import { webhookDeliveriesProjection, webhookEndpointsProjection } from "../infra/webhooks/WebhookProjections.ts"

export const allProjections: ReadonlyArray<Projection> = [
  connectionsProjection,
  executionsProjection,
  webhookEndpointsProjection,
  webhookDeliveriesProjection
]
