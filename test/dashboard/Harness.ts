/**
 * What every dashboard test file sets up while it loads: the built dashboard, the whole service
 * in this process (its rate limit roomy enough for a browser that polls), the client library on
 * the same key, and headless Chromium for the file's tests; with `receiver`, also a local HTTPS
 * webhook receiver whose certificate this process trusts until the file is done.
 */
import { getCACertificates, setDefaultCACertificates } from "node:tls"
import { afterAll, beforeAll } from "vitest"
import { type Client, createClient } from "../../client/index.ts"
import { ensureDashboard } from "../../dashboard/scripts/build.ts"
import type { Env } from "../support/Config.ts"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { makeCertificate, type Receiver, startReceiver } from "../support/WebhookReceiver.ts"
import { type Browser, launch } from "./Browser.ts"

export interface Harness<R extends Receiver | undefined> {
  readonly service: InProcessService
  /** The client library on the unpinned key. */
  readonly api: Client
  /** The service's address of a path. */
  readonly url: (path: string) => string
  readonly receiver: R
  /** Launched before the file's first test, closed after its last. */
  browser: Browser
}

const ROOMY: Env = { SERVICE_RATE_LIMIT_REQUEST_BURST: "10000", SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "60000" }

export function dashboardHarness(env?: Env): Promise<Harness<undefined>>
export function dashboardHarness(env: Env, options: { readonly receiver: true }): Promise<Harness<Receiver>>
export async function dashboardHarness(env: Env = {}, options: { readonly receiver?: boolean } = {}): Promise<Harness<Receiver | undefined>> {
  await ensureDashboard()
  const originalCAs = getCACertificates("default")
  let receiver: Receiver | undefined
  if (options.receiver === true) {
    const certificate = makeCertificate()
    setDefaultCACertificates([...originalCAs, certificate.cert])
    receiver = await startReceiver(certificate)
  }
  const service = await startService({ ...(receiver === undefined ? {} : { SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" }), ...ROOMY, ...env })
  const harness: Harness<Receiver | undefined> = {
    service,
    api: createClient({ baseUrl: service.baseUrl, apiKey: KEY }),
    url: (path) => `${service.baseUrl}${path}`,
    receiver,
    browser: undefined as unknown as Browser
  }
  beforeAll(async () => {
    harness.browser = await launch()
  })
  afterAll(async () => {
    await (harness.browser as Browser | undefined)?.close()
    await service.close()
    if (receiver !== undefined) {
      await receiver.close()
      setDefaultCACertificates(originalCAs)
    }
  })
  return harness
}
