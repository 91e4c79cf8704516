/**
 * The gateway under test: the whole service (in this process) on a random port, with `/mcp`
 * served by its own HTTP server, as users reach it.
 */
import { type Env } from "../../support/Config.ts"
import { type InProcessService, startService } from "../../support/Service.ts"

export interface GatewayUnderTest {
  /** The gateway's address: `<base url>/mcp`. */
  readonly url: string
  readonly service: InProcessService
  readonly close: () => Promise<void>
}

/** High limits unless a test sets its own. */
export const ROOMY_LIMITS: Env = {
  SERVICE_RATE_LIMIT_REQUEST_BURST: "100000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "100000",
  SERVICE_RATE_LIMIT_EXECUTE_BURST: "100000",
  SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE: "100000"
}

/** A service with roomy limits unless `env` sets its own, and its gateway's URL. */
export const startGateway = async (env: Env = {}): Promise<GatewayUnderTest> => {
  const service = await startService({ ...ROOMY_LIMITS, ...env })
  return { url: `${service.baseUrl}/mcp`, service, close: () => service.close() }
}
