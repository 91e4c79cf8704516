/**
 * Which key a process seals and MACs new values under while a rotation is under way (docs/operations.md,
 * "Rotating the secret key"). A rotation is a rolling restart: for a while a process with the
 * new key (and the old one as SERVICE_SECRET_KEY_PREVIOUS) runs beside processes still on the old
 * key alone. A webhook secret or a credential it sealed under the new key would be unreadable
 * to those: their every delivery attempt to that endpoint would fail `secret_unavailable`, every
 * execution with that connection 422. So while a running process lacks the current key (by the
 * key names in its `runners` row, KeyHolders.ts), new values are sealed under the previous key,
 * which every process of the rotation holds; once none lacks it, under the current key. So are
 * the MACs of list cursors and the sealed ids of MCP stream events, which any process must
 * accept (outside audit: a cursor the rotating process made was 422 at the other).
 * `secrets reseal` runs only after that (it refuses while a process lacks the new key) and
 * re-seals what was sealed under the previous key meanwhile.
 *
 * Before a process seals under the current key, it marks that key the newest one in use
 * (KeyCheck.ts `markNewest`): from then on values exist that the previous key alone does not
 * open, so a process started with the previous key alone is refused at its start rather than
 * failing them one request and one delivery at a time (outside audit).
 *
 * The running processes are looked at once at start and every RECHECK_MS after; each change
 * is logged (one line). A look that fails changes nothing.
 */
import { Duration, Effect, Option, type Scope } from "effect"
import type { SqlClient } from "effect/sql"
import { describeProcesses, processesWithoutKey, type RunningProcess } from "./KeyHolders.ts"
import { markNewest } from "./KeyCheck.ts"
import type { KeyRing } from "./Secrets.ts"

export const RECHECK_MS = 3_000

/** Which key new values are sealed under, given the running processes that lack the current key. */
export const sealingKeyFor = (lacking: ReadonlyArray<RunningProcess>): "current" | "previous" => (lacking.length === 0 ? "current" : "previous")

/** The one line a change of sealing key logs. */
export const sealingChangeLine = (lacking: ReadonlyArray<RunningProcess>): string =>
  lacking.length === 0
    ? "secret key rotation: every running process holds SERVICE_SECRET_KEY: new secrets are sealed under it"
    : `secret key rotation: ${lacking.length} running ${lacking.length === 1 ? "process does" : "processes do"} not hold SERVICE_SECRET_KEY (${
      describeProcesses(lacking)
    }): new secrets are sealed under SERVICE_SECRET_KEY_PREVIOUS until none does`

/** The seal and the MAC of new values. */
export interface Sealing {
  readonly seal: (plaintext: string, context?: string) => string
  readonly mac: (purpose: string, data: string) => string
}

/**
 * The seal and MAC of a process on a database: the current key's, or during a rotation the key
 * every running process holds, looked at again in the background for as long as the scope lives.
 */
export const sealing = (sql: SqlClient.SqlClient, ring: KeyRing): Effect.Effect<Sealing, never, Scope.Scope> =>
  Effect.gen(function*() {
    const underPrevious = ring.sealUnderPrevious
    const currentId = ring.ids[0]
    if (underPrevious === undefined || currentId === undefined) return { seal: ring.seal, mac: ring.mac }
    // Until a look succeeds: the previous key, which every process of a rotation holds.
    let chosen: "current" | "previous" | undefined
    const look = Effect.gen(function*() {
      const lacking = yield* processesWithoutKey(sql, currentId).pipe(Effect.option)
      if (Option.isNone(lacking)) return
      const next = sealingKeyFor(lacking.value)
      if (next === chosen) return
      // The mark first: no value is sealed under the current key before it says so.
      if (next === "current") {
        const marked = yield* markNewest(sql, ring).pipe(Effect.option)
        if (Option.isNone(marked)) return
      }
      chosen = next
      yield* Effect.logInfo(sealingChangeLine(lacking.value))
    })
    yield* look
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(Duration.millis(RECHECK_MS)), look)))
    return {
      seal: (plaintext: string, context?: string) => (chosen === "current" ? ring.seal(plaintext, context) : underPrevious(plaintext, context)),
      mac: (purpose: string, data: string) => (chosen === "current" ? ring.mac(purpose, data) : ring.previousMac(purpose, data) ?? ring.mac(purpose, data))
    }
  })
