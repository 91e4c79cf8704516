/**
 * Whether a failure is the store being away (a lost connection, Postgres restarting or hanging,
 * a deadlock or a timeout that a retry may not meet again), as opposed to a fault a retry meets
 * again (a dropped table, a bug). The HTTP edge (http/server/Envelope.ts) and the MCP gateway
 * answer an outage 503 with `Retry-After`.
 */
import { Cause } from "effect"
import { normalized } from "../../domain/Errors.ts"

/** The answer to a request met by a store outage: 503, retryable, after a second (`Retry-After` says the same). */
export const storeUnavailableAnswer = () => {
  const error = normalized("provider_unavailable", "The service's store is unavailable; retry shortly.", 1)
  return { status: 503, error, headers: { "retry-after": String(error.retryAfter) } } as const
}

/** SQL failures that a retry may not meet again: lost connections, deadlocks, timeouts. */
const TRANSIENT_SQL = new Set(["ConnectionError", "DeadlockError", "SerializationError", "LockTimeoutError", "StatementTimeoutError"])
/** SQLSTATE classes of the same: connection exceptions, operator intervention, resources. */
const TRANSIENT_SQLSTATE = /^(08|57P|53)/

export const isStoreOutage = (failure: unknown, depth = 0): boolean => {
  if (depth > 4 || typeof failure !== "object" || failure === null) return false
  const error = failure as { readonly _tag?: unknown; readonly reason?: { readonly _tag?: unknown }; readonly cause?: unknown; readonly code?: unknown }
  // The store's own failure is an outage only when what it wraps is one (a dropped table is not).
  if (error._tag === "StoreUnavailable") return isStoreOutage(error.cause, depth + 1)
  if (error._tag === "SqlError" && typeof error.reason?._tag === "string" && TRANSIENT_SQL.has(error.reason._tag)) return true
  if (typeof error.code === "string" && (TRANSIENT_SQLSTATE.test(error.code) || error.code.startsWith("ECONN") || error.code === "EPIPE")) return true
  return isStoreOutage(error.cause, depth + 1) || isStoreOutage(error.reason, depth + 1)
}

/** Whether a failure or defect of `cause` is a store outage. */
export const causeIsStoreOutage = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((reason) =>
    isStoreOutage(Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined)
  )
