/** Webhooks as one layer: endpoint commands, the delivery lanes and the dispatcher. */
import * as WebhookEndpoints from "../infra/WebhookEndpoints.ts"

export const WebhooksLive = WebhookEndpoints.layer
