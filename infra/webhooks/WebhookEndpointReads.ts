/**
 * The endpoint as it is now, read by a delivery lane before every attempt (its URL, secret and
 * active flag). On Postgres the reads of all lanes are coalesced: one statement is in flight at a
 * time, and every lane asking meanwhile shares the next one (`endpoint_id = ANY(...)`). Each read
 * still starts after its lane asked, so an attempt never uses an endpoint older than the moment it
 * was about to begin. In memory a read is a map lookup.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { inOrder, makeBatcher } from "../Batcher.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import { decodeRow, physicalName } from "../eventlog/PgViewStore.ts"
import { WebhookEndpoints } from "./WebhookEndpoints.ts"
import { endpointFromRow, type EndpointRow, ENDPOINTS_TABLE, webhookEndpointsProjection } from "./WebhookProjections.ts"

export interface WebhookEndpointReadsShape {
  /** The endpoint's current row; undefined once deleted. */
  readonly current: (endpointId: string) => Effect.Effect<EndpointRow | undefined, StoreUnavailable>
}

export class WebhookEndpointReads extends Context.Service<WebhookEndpointReads, WebhookEndpointReadsShape>()("app/infra/WebhookEndpointReads") {}

export const layerMemory: Layer.Layer<WebhookEndpointReads, never, WebhookEndpoints> = Layer.effect(
  WebhookEndpointReads,
  Effect.map(WebhookEndpoints, (endpoints) => WebhookEndpointReads.of({ current: endpoints.find }))
)

/** Endpoints per statement at most. */
const MAX_BATCH = 500

export const layerPg: Layer.Layer<WebhookEndpointReads, never, SqlClient.SqlClient> = Layer.effect(
  WebhookEndpointReads,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const spec = webhookEndpointsProjection.tables.find((table) => table.name === ENDPOINTS_TABLE)!
    const statement = `SELECT * FROM "${physicalName(ENDPOINTS_TABLE)}" WHERE endpoint_id = ANY($1::text[])`
    const current = yield* makeBatcher<string, EndpointRow | undefined, StoreUnavailable>({
      maxBatch: MAX_BATCH,
      serve: inOrder((endpointIds) =>
        sql.unsafe<Record<string, unknown>>(statement, [[...new Set(endpointIds)]]).pipe(
          Effect.map((rows) => {
            const found = new Map<string, EndpointRow>()
            for (const raw of rows) {
              const endpoint = endpointFromRow(decodeRow(spec, raw))
              found.set(endpoint.endpointId, endpoint)
            }
            return endpointIds.map((endpointId) => found.get(endpointId))
          }),
          Effect.mapError((cause) => new StoreUnavailable({ cause }))
        ))
    })
    return WebhookEndpointReads.of({ current })
  })
)
