/**
 * Id generation: the clock and randomness that domain/Ids.ts leaves out.
 */
import { randomBytes } from "node:crypto"
import { encodeIdBody, ID_RANDOM_BYTES, type IdPrefix } from "../domain/Ids.ts"

// Random bytes are drawn from the CSPRNG in 4 KiB blocks: one call per ~290 ids instead of one
// per id (a measurable share of a request's CPU on the execute path).
const POOL_BYTES = 4096
let pool = randomBytes(POOL_BYTES)
let offset = 0

/** Where the next `n` random bytes start in the pool (read in place: no view per id). */
const take = (n: number): number => {
  if (offset + n > pool.length) {
    pool = randomBytes(POOL_BYTES)
    offset = 0
  }
  const at = offset
  offset += n
  return at
}

/**
 * A new `<prefix>_<body>` id, time-ordered and unguessable. Its time is the wall clock's, not
 * Effect's `Clock`: ids are made outside effects too, and under a `TestClock` held still they
 * must still be unique and ordered as they are across processes.
 */
export const newId = <P extends IdPrefix>(prefix: P): `${P}_${string}` => {
  const at = take(ID_RANDOM_BYTES)
  return encodeIdBody(Date.now(), pool, prefix, at) as `${P}_${string}`
}

/** A request id for the `Request-Id` header and error envelopes. */
export const newRequestId = (): string => newId("req")
