/** Helpers for webhook tests against a service process: ports, keys, endpoints, delivery records. */
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { freePort } from "./Ports.ts"
import { type Client, startService } from "./Service.ts"
import { type Certificate, makeCertificate, startReceiver } from "./WebhookReceiver.ts"

export { freePort }

const PROJECTS = Array.from({ length: 20 }, (_, i) => `p${i + 1}`)
export const keyOf = (project: string) => `wh_test_key_${project}_000000`
export const KEYS = PROJECTS.map((p) => `${keyOf(p)}=proj_${p}`).join(",")

export const serviceEnv = (databaseUrl: string, certificate: Certificate, extra: Record<string, string> = {}) => ({
  SERVICE_DATABASE_URL: databaseUrl,
  SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64"),
  SERVICE_API_KEYS: KEYS,
  NODE_EXTRA_CA_CERTS: certificate.certPath,
  SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
  SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,200,200,200,200",
  SERVICE_WEBHOOK_TIMEOUT_MS: "1000",
  SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "600000",
  ...extra
})

export interface Endpoint {
  readonly endpointId: string
  readonly secret: string
}

export const createEndpoint = async (client: Client, project: string, url: string, events: ReadonlyArray<string> = ["execution.completed"]): Promise<Endpoint> => {
  const response = await client.fetch("/v1/webhooks", { method: "POST", key: keyOf(project), json: { url, events } })
  const body = (await response.json()) as Endpoint
  if (response.status !== 201) throw new Error(`create failed: ${JSON.stringify(body)}`)
  return body
}

export interface DeliveryRecord {
  readonly deliveryId: string
  readonly eventId: string
  readonly eventType: string
  readonly status: string
  readonly attempts: ReadonlyArray<{ readonly attemptedAt: string; readonly statusCode?: number; readonly error?: string }>
  readonly nextRetryAt?: string
  readonly completedAt?: string
}

export const deliveriesOf = async (client: Client, project: string, endpointId: string): Promise<ReadonlyArray<DeliveryRecord>> => {
  const response = await client.fetch(`/v1/webhooks/${endpointId}/deliveries`, { key: keyOf(project) })
  const body = (await response.json()) as { deliveries: ReadonlyArray<DeliveryRecord> }
  return body.deliveries
}


/**
 * The service in this process, in memory, with an HTTPS receiver whose self-signed certificate
 * is added to this process's default trust store (what NODE_EXTRA_CA_CERTS does for a child).
 */
export const startMemoryWebhookService = async (env: Record<string, string> = {}) => {
  const original = getCACertificates("default")
  const certificate = makeCertificate()
  setDefaultCACertificates([...original, certificate.cert])
  const receiver = await startReceiver(certificate)
  const service = await startService({
    SERVICE_API_KEYS: KEYS,
    SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
    SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,100,100,100,100",
    ...env
  })
  return {
    service,
    receiver,
    close: async () => {
      await service.close()
      await receiver.close()
      setDefaultCACertificates(original)
    }
  }
}
