/**
 * Id generation: the clock and randomness that domain/Ids.ts leaves out.
 */
import { randomBytes } from "node:crypto"
import { encodeIdBody, ID_RANDOM_BYTES, type IdPrefix } from "../domain/Ids.ts"

/** A new `<prefix>_<body>` id, time-ordered and unguessable. */
export const newId = <P extends IdPrefix>(prefix: P): `${P}_${string}` =>
  `${prefix}_${encodeIdBody(Date.now(), randomBytes(ID_RANDOM_BYTES))}`

/** A request id for the `Request-Id` header and error envelopes. */
export const newRequestId = (): string => newId("req")
