/**
 * Per-endpoint lane leases: with several service processes on one Postgres, only the process
 * holding an endpoint's lease runs its lane, so deliveries stay one at a time and in order.
 *
 * Postgres: session advisory locks (`pg_try_advisory_lock`) on one reserved connection per
 * process. A crashed process's connection closes and its locks vanish at once, so a restart or
 * a peer takes over without waiting for an expiry. If that connection breaks, every lock it
 * held is gone while this process's lanes run on until their next lease round: a peer may then
 * run the same lane for a moment (a possible duplicate, allowed by at-least-once delivery). The
 * next lease statement reserves a new connection.
 * Memory: one process, every lease granted.
 */
import { Context, Effect, Exit, Layer, Scope, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { Connection } from "effect/sql/SqlConnection"

export interface WebhookLeasesShape {
  readonly tryAcquire: (key: string) => Effect.Effect<boolean>
  readonly release: (key: string) => Effect.Effect<void>
}

export class WebhookLeases extends Context.Service<WebhookLeases, WebhookLeasesShape>()("app/infra/WebhookLeases") {}

export const layerMemory: Layer.Layer<WebhookLeases> = Layer.succeed(WebhookLeases, {
  tryAcquire: () => Effect.succeed(true),
  release: () => Effect.void
})

const LOCK_NAMESPACE = "service/webhook-lane/"

export const layerPg: Layer.Layer<WebhookLeases, never, SqlClient.SqlClient> = Layer.effect(
  WebhookLeases,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const layerScope = yield* Effect.scope
    // One statement at a time on the reserved connection.
    const lock = yield* Semaphore.make(1)
    let current: { readonly connection: Connection; readonly scope: Scope.Closeable } | undefined
    const connect = Effect.gen(function*() {
      const scope = yield* Scope.fork(layerScope)
      const connection = yield* Scope.provide(sql.reserve, scope)
      current = { connection, scope }
      return connection
    })
    // A broken connection took its locks with it: the next statement reconnects.
    const drop = Effect.suspend(() => {
      const old = current
      current = undefined
      return old === undefined ? Effect.void : Scope.close(old.scope, Exit.void)
    })
    const run = (statement: string, key: string) =>
      lock.withPermits(1)(
        Effect.gen(function*() {
          const connection = current?.connection ?? (yield* connect)
          return yield* connection.execute(statement, [`${LOCK_NAMESPACE}${key}`], undefined).pipe(
            Effect.tapError(() => drop)
          )
        })
      )
    return WebhookLeases.of({
      tryAcquire: (key) =>
        run("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok", key).pipe(
          Effect.map((rows) => (rows[0] as { ok?: boolean } | undefined)?.ok === true),
          Effect.catch((error) => Effect.logWarning("webhook lease unavailable", error).pipe(Effect.as(false)))
        ),
      release: (key) =>
        run("SELECT pg_advisory_unlock(hashtextextended($1, 0))", key).pipe(
          Effect.asVoid,
          Effect.catch((error) => Effect.logWarning("webhook lease release failed", error))
        )
    })
  })
)
