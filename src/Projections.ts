/** Every projection the service runs; features add theirs here. */
import type { Projection } from "../infra/Projection.ts"
import { webhookDeliveriesProjection, webhookEndpointsProjection } from "../infra/WebhookProjections.ts"

export const allProjections: ReadonlyArray<Projection> = [webhookEndpointsProjection, webhookDeliveriesProjection]
