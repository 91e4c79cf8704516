/**
 * Which running processes hold a secret key: each records the public names of its keys
 * (KeyRing.ids, comma-separated) in its `runners` row (actors/Runner.ts). `secrets reseal`
 * refuses while one lacks the new key; a process in a rotation seals under the previous key
 * while one does (SealingKey.ts). A process that recorded no names (started by a version from
 * before they were kept) counts as not holding it.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/** A live `runners` row: where the process runs, and the names of the keys it holds. */
export interface RunningProcess {
  readonly host: string
  readonly pid: number
  readonly key_ids: string | null
}

export const holdsKey = (runner: RunningProcess, keyId: string): boolean => (runner.key_ids ?? "").split(",").includes(keyId)

/** The processes, for a message: `web-2 pid 4182, web-3 pid 977`. */
export const describeProcesses = (processes: ReadonlyArray<RunningProcess>): string =>
  processes.map((runner) => `${runner.host} pid ${runner.pid}`).join(", ")

/** The running processes (lease not expired) that do not hold the key named `keyId`, oldest first. */
export const processesWithoutKey = (sql: SqlClient.SqlClient, keyId: string) =>
  Effect.map(
    sql<RunningProcess>`SELECT host, pid, key_ids FROM runners WHERE expires_at > now() ORDER BY started_at`,
    (rows) => rows.filter((row) => !holdsKey(row, keyId))
  )
