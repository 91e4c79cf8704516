/**
 * Authentication at the edge, on the headers alone, before a byte of the body is read (a
 * 33 MiB upload without a key costs nothing but its headers) and before `100 Continue` is sent
 * to a client that asked for it. The API's authentication middleware then reuses the verdict.
 *
 * Unknown keys that cost the store a query are throttled per client address, so that a flood of
 * made-up keys cannot take the database pool: each lookup takes a token from the address's bucket
 * of UNKNOWN_KEY_POLICY as it starts (a valid key gives it back), and an address with none left
 * has its lookups made one at a time. Every key is still judged: a bad key is 401 however often
 * it is sent (interface.md, Authentication 1), and a valid key is never refused for its
 * neighbours' sake, behind a proxy or NAT where many clients share an address (Authentication 8:
 * rate limits apply after authentication). A key whose verdict needs no query (a bootstrap key, a
 * cached verdict either way, any key in memory mode) is never throttled.
 */
import { Clock, Effect, Option, Semaphore } from "effect"
import type { HttpServerRequest } from "effect/http"
import { normalized } from "../../domain/Errors.ts"
import { type BucketPolicy, type BucketState, refill, take } from "../../domain/TokenBucket.ts"
import type { ApiKeysShape, Principal } from "../../infra/access/ApiKeys.ts"
import { BoundedCache } from "../../infra/BoundedCache.ts"
import { EdgeFailure } from "./Envelope.ts"

/** Per client address: 120 unknown keys at once, then two a second. */
export const UNKNOWN_KEY_POLICY: BucketPolicy = { perMinute: 120, burst: 120 }

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i

const unauthorized = (code: "auth_missing" | "auth_expired", message: string) =>
  new EdgeFailure(401, normalized(code, message), { "www-authenticate": "Bearer" })

export type Verdict =
  | { readonly _tag: "Allowed"; readonly principal: Principal }
  | { readonly _tag: "Refused"; readonly failure: EdgeFailure }

/** The key of an `Authorization: Bearer <key>` header; undefined without one. */
export const bearerToken = (header: string | undefined): string | undefined =>
  header === undefined ? undefined : BEARER.exec(header)?.[1]

const presentedKey = (request: HttpServerRequest.HttpServerRequest): string | undefined => bearerToken(request.headers["authorization"])

const MISSING: Verdict = {
  _tag: "Refused",
  failure: unauthorized("auth_missing", "Send the project API key as Authorization: Bearer <key>.")
}

const EXPIRED: Verdict = { _tag: "Refused", failure: unauthorized("auth_expired", "The API key is invalid or revoked.") }

export const makeGate = (keys: ApiKeysShape, policy: BucketPolicy = UNKNOWN_KEY_POLICY) => {
  // Bounded: addresses beyond the most recent 50,000 start afresh (a full bucket, no lane).
  const buckets = new BoundedCache<string, BucketState>({ maxWeight: 50_000, ttlMs: 10 * 60_000 })
  const lanes = new BoundedCache<string, Semaphore.Semaphore>({ maxWeight: 50_000, ttlMs: 10 * 60_000 })
  /** Takes a token for a lookup about to start; false when the address has none left. */
  const charge = (address: string, now: number) => {
    const { state, grant } = take(policy, buckets.get(address, now), 1, now)
    buckets.set(address, state, now)
    return grant.granted === 1
  }
  /** A lookup that found a valid key gives its token back. */
  const refund = (address: string, now: number) => {
    const tokens = Math.min(policy.burst, refill(policy, buckets.get(address, now), now) + 1)
    buckets.set(address, { tokens, updatedMs: now }, now)
  }
  const lane = (address: string, now: number) => {
    let semaphore = lanes.get(address, now)
    if (semaphore === undefined) {
      semaphore = Semaphore.makeUnsafe(1)
      lanes.set(address, semaphore, now)
    }
    return semaphore
  }

  /**
   * The verdict that needs no clock and no store: a missing bearer, or a key already known (a
   * bootstrap key or a cache hit). Undefined: the key must be looked up (`check`).
   */
  const quick = (request: HttpServerRequest.HttpServerRequest): Verdict | undefined => {
    const presented = presentedKey(request)
    if (presented === undefined) return MISSING
    const known = keys.known(presented)
    return known === undefined ? undefined : { _tag: "Allowed", principal: known }
  }

  /** The verdict on any request: `quick`'s, else the key looked up, with unknown keys throttled. */
  const check = Effect.fnUntraced(function*(request: HttpServerRequest.HttpServerRequest): Effect.fn.Return<Verdict> {
    const verdict = quick(request)
    if (verdict !== undefined) return verdict
    const presented = presentedKey(request) ?? ""
    if (!keys.costsLookup(presented)) {
      const principal = yield* Effect.orDie(keys.verify(presented))
      return principal === undefined ? EXPIRED : { _tag: "Allowed", principal }
    }
    const address = Option.getOrElse(request.remoteAddress, () => "unknown")
    const now = yield* Clock.currentTimeMillis
    const lookup = Effect.orDie(keys.verify(presented))
    const principal = charge(address, now) ? yield* lookup : yield* Semaphore.withPermit(lane(address, now), lookup)
    if (principal === undefined) return EXPIRED
    refund(address, yield* Clock.currentTimeMillis)
    return { _tag: "Allowed", principal }
  })
  return { quick, check }
}

export type Gate = ReturnType<typeof makeGate>
