/**
 * The endpoint as it is now, read by a delivery lane before every attempt (its URL, secret and
 * active flag). On Postgres the reads of all lanes are coalesced: one statement is in flight at a
 * time, and every lane asking meanwhile shares the next one (`endpoint_id = ANY(...)`). Each read
 * still starts after its lane asked, so an attempt never uses an endpoint older than the moment it
 * was about to begin. In memory a read is a map lookup.
 */
import { Context, Deferred, Effect, Exit, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
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

interface Waiting {
  readonly endpointId: string
  readonly done: Deferred.Deferred<EndpointRow | undefined, StoreUnavailable>
}

export const layerPg: Layer.Layer<WebhookEndpointReads, never, SqlClient.SqlClient> = Layer.effect(
  WebhookEndpointReads,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const spec = webhookEndpointsProjection.tables.find((table) => table.name === ENDPOINTS_TABLE)!
    const statement = `SELECT * FROM "${physicalName(ENDPOINTS_TABLE)}" WHERE endpoint_id = ANY($1::text[])`
    const queue = yield* Queue.unbounded<Waiting>()

    const readMany = Effect.fnUntraced(function*(batch: ReadonlyArray<Waiting>) {
      const ids = [...new Set(batch.map((w) => w.endpointId))]
      const exit = yield* Effect.exit(sql.unsafe<Record<string, unknown>>(statement, [ids]))
      if (Exit.isFailure(exit)) {
        const error = new StoreUnavailable({ cause: exit.cause })
        for (const waiting of batch) Deferred.doneUnsafe(waiting.done, Exit.fail(error))
        return
      }
      const found = new Map<string, EndpointRow>()
      for (const raw of exit.value) {
        const endpoint = endpointFromRow(decodeRow(spec, raw))
        found.set(endpoint.endpointId, endpoint)
      }
      for (const waiting of batch) Deferred.doneUnsafe(waiting.done, Exit.succeed(found.get(waiting.endpointId)))
    })

    yield* Effect.forkScoped(Queue.takeBetween(queue, 1, MAX_BATCH).pipe(Effect.flatMap(readMany), Effect.forever))

    return WebhookEndpointReads.of({
      current: (endpointId) =>
        Effect.suspend(() => {
          const done = Deferred.makeUnsafe<EndpointRow | undefined, StoreUnavailable>()
          Queue.offerUnsafe(queue, { endpointId, done })
          return Deferred.await(done)
        })
    })
  })
)
