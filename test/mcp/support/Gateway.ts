/**
 * The gateway under test: the whole service (in this process) on a random port, with `/mcp`
 * served by its own HTTP server, as users reach it.
 */
import { Effect } from "effect"
import { Secrets } from "../../../infra/access/Secrets.ts"
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

/**
 * An SSE event id the gateway gave, opened (mcp/EventIds.ts: clients see them sealed): `tx:seq`
 * or `tx:seq:<kind><tag>.<n>`.
 */
export const openedEventId = (gw: GatewayUnderTest, sessionId: string, id: string | undefined): Promise<string> =>
  gw.service.runtime.runPromise(Effect.map(Secrets, (secrets) => secrets.open(id ?? "", sessionId) ?? `not an event id of session ${sessionId}: ${id}`))

/** An id as the gateway would give one to `sessionId` for `plain` (`tx:seq…`), to resume from a position of a test's choosing. */
export const sealedEventId = (gw: GatewayUnderTest, sessionId: string, plain: string): Promise<string> =>
  gw.service.runtime.runPromise(Effect.map(Secrets, (secrets) => secrets.seal(plain, sessionId)))
