/** Every projection the service runs; features add theirs here. */
import { connectionsProjection } from "../infra/ConnectionsProjection.ts"
import { executionsProjection } from "../infra/ExecutionsProjection.ts"
import type { Projection } from "../infra/Projection.ts"
import { webhookDeliveriesProjection, webhookEndpointsProjection } from "../infra/WebhookProjections.ts"

export const allProjections: ReadonlyArray<Projection> = [
  connectionsProjection,
  executionsProjection,
  webhookEndpointsProjection,
  webhookDeliveriesProjection
]
