/**
 * Which process owns an execution's dispatch, and which owners are still alive. Each process is
 * an owner with an id of its own; its executions name it in their events. With a database the
 * owner holds a session advisory lock for as long as it lives, so a process killed with -9 stops
 * being alive the moment Postgres notices its connection is gone, and its peers recover its
 * executions (ExecutionRecovery.ts) without touching those of live processes.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomInt } from "node:crypto"
import { StoreUnavailable } from "../eventlog/EventStore.ts"

export interface ExecutionOwnersShape {
  /** This process's owner id. */
  readonly self: string
  /** The owners alive now (this one included). */
  readonly alive: Effect.Effect<ReadonlySet<string>, StoreUnavailable>
}

export class ExecutionOwners extends Context.Service<ExecutionOwners, ExecutionOwnersShape>()("app/infra/ExecutionOwners") {}

/** Without a database there is one process, and it is alive. */
export const layerMemory = Layer.sync(ExecutionOwners, () => {
  const self = "local"
  return ExecutionOwners.of({ self, alive: Effect.succeed(new Set([self])) })
})

/** Advisory lock class of owners; the second key is the owner id. */
const OWNER_LOCK_CLASS = 7_300

export const layerPg: Layer.Layer<ExecutionOwners, never, SqlClient.SqlClient> = Layer.effect(
  ExecutionOwners,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // A connection of its own, held for the life of the process: its session holds the lock.
    const conn = yield* sql.reserve
    let self: string | undefined
    while (self === undefined) {
      const candidate = randomInt(1, 2 ** 31 - 1)
      const rows = yield* conn.executeValues(`SELECT pg_try_advisory_lock(${OWNER_LOCK_CLASS}, ${candidate})`, [])
      if (rows[0]?.[0] === true) self = String(candidate)
    }
    const owner = self
    yield* Effect.addFinalizer(() => Effect.ignore(conn.executeRaw(`SELECT pg_advisory_unlock(${OWNER_LOCK_CLASS}, ${owner})`, [])))
    const alive = sql<{ owner: string }>`
      SELECT objid::text AS owner FROM pg_locks
      WHERE locktype = 'advisory' AND classid = ${OWNER_LOCK_CLASS} AND objsubid = 2 AND granted
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.pipe(
      Effect.map((rows) => new Set(rows.map((row) => row.owner))),
      Effect.mapError((cause) => new StoreUnavailable({ cause }))
    )
    return ExecutionOwners.of({ self: owner, alive })
  }).pipe(Effect.orDie)
)
