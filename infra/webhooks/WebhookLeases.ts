/**
 * Per-endpoint lane leases: with several service processes on one Postgres, only the process
 * holding an endpoint's lease runs its lane, so deliveries stay one at a time and in order.
 *
 * Postgres: session advisory locks (`pg_try_advisory_lock`) on one reserved connection per
 * process; the keys asked for while a statement runs share the next one. A crashed process's
 * connection closes and its locks vanish at once, so a restart or a peer takes over without
 * waiting for an expiry. If that connection breaks, every lock it
 * held is gone while this process's lanes run on until their next lease round: a peer may then
 * run the same lane for a moment (a possible duplicate, allowed by at-least-once delivery). The
 * next lease statement reserves a new connection.
 * Memory: one process, every lease granted.
 */
import { Context, Deferred, Effect, Exit, Layer, Queue, Scope } from "effect"
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

/** Keys per statement at most. */
const MAX_BATCH = 500

interface Waiting {
  readonly op: "acquire" | "release"
  readonly key: string
  readonly done: Deferred.Deferred<boolean>
}

export const layerPg: Layer.Layer<WebhookLeases, never, SqlClient.SqlClient> = Layer.effect(
  WebhookLeases,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const layerScope = yield* Effect.scope
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
    /** One statement for many keys, answers in key order. */
    const run = Effect.fnUntraced(function*(statement: string, keys: ReadonlyArray<string>) {
      const connection = current?.connection ?? (yield* connect)
      return yield* connection.execute(statement, [keys.map((key) => `${LOCK_NAMESPACE}${key}`)], undefined).pipe(
        Effect.tapError(() => drop)
      )
    })
    const ACQUIRE = `SELECT pg_try_advisory_lock(hashtextextended(k, 0)) AS ok
      FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i`
    const RELEASE = `SELECT pg_advisory_unlock(hashtextextended(k, 0))
      FROM unnest($1::text[]) WITH ORDINALITY AS u(k, i) ORDER BY i`

    // Everything goes through one reserved connection, one statement at a time; keys asked for
    // while a statement runs share the next one (many lanes start or stop together).
    const queue = yield* Queue.unbounded<Waiting>()
    const serve = Effect.fnUntraced(function*(batch: ReadonlyArray<Waiting>) {
      const releases = batch.filter((w) => w.op === "release")
      const acquires = batch.filter((w) => w.op === "acquire")
      if (releases.length > 0) {
        yield* run(RELEASE, releases.map((w) => w.key)).pipe(
          Effect.catch((error) => Effect.logWarning("webhook lease release failed", error))
        )
        for (const waiting of releases) Deferred.doneUnsafe(waiting.done, Exit.succeed(true))
      }
      if (acquires.length > 0) {
        const granted = yield* run(ACQUIRE, acquires.map((w) => w.key)).pipe(
          Effect.map((rows) => rows.map((row) => (row as { ok?: boolean }).ok === true)),
          Effect.catch((error) => Effect.logWarning("webhook lease unavailable", error).pipe(Effect.as([] as ReadonlyArray<boolean>)))
        )
        acquires.forEach((waiting, i) => Deferred.doneUnsafe(waiting.done, Exit.succeed(granted[i] === true)))
      }
    })
    yield* Effect.forkScoped(Queue.takeBetween(queue, 1, MAX_BATCH).pipe(Effect.flatMap(serve), Effect.forever))

    const ask = (op: Waiting["op"], key: string) =>
      Effect.suspend(() => {
        const done = Deferred.makeUnsafe<boolean>()
        Queue.offerUnsafe(queue, { op, key, done })
        return Deferred.await(done)
      })
    return WebhookLeases.of({
      tryAcquire: (key) => ask("acquire", key),
      release: (key) => Effect.asVoid(ask("release", key))
    })
  })
)
