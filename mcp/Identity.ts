/**
 * Who an MCP request acts for (spec, Authentication 5): the gateway-configured SERVICE_USER_ID
 * first, then the `X-Service-User-Id` header, then the call's `_meta["dev.service/userId"]`. A
 * pinned key refuses any of them that names someone else (403 `auth_insufficient_scope` at the
 * HTTP level, an `isError` result inside a call); without any, a pinned key acts for its user.
 *
 * A session is bound to its key (by hash) and its user: a request with another key, or with a
 * header naming another user than the session's, is answered as if the session did not exist.
 */
import { hash } from "node:crypto"
import { InsufficientScope, InvalidInput } from "../domain/Errors.ts"

export const USER_HEADER = "x-service-user-id"

const USER_ID = /^[A-Za-z0-9_.-]{1,64}$/

export const keyHash = (key: string): string => hash("sha256", key, "hex")

const pinnedElsewhere = () => new InsufficientScope({ message: "This key is pinned to another user." })

/** Each named user must be well formed and, with a pinned key, the pinned user. */
const check = (pinned: string | undefined, named: ReadonlyArray<readonly [string, string | undefined]>) => {
  for (const [where, value] of named) {
    if (value === undefined) continue
    if (!USER_ID.test(value)) return new InvalidInput({ message: `${where} must match [A-Za-z0-9_.-]{1,64}.` })
    if (pinned !== undefined && value !== pinned) return pinnedElsewhere()
  }
  return undefined
}

/**
 * The session's user at initialize: SERVICE_USER_ID, else the header, else the pinned user;
 * undefined when none is known (each call may then name one in `_meta`).
 */
export const sessionUser = (
  configured: string | undefined,
  header: string | undefined,
  pinned: string | undefined
): { readonly userId: string | undefined } | InvalidInput | InsufficientScope =>
  check(pinned, [["SERVICE_USER_ID", configured], ["X-Service-User-Id", header]]) ?? { userId: configured ?? header ?? pinned }

/**
 * A later request's header against the session: absent, or naming the session's user. It does
 * not matter under SERVICE_USER_ID (which comes first); a session without a user takes the
 * header as the request's user (checked against the pin).
 */
export const headerMatches = (
  configured: string | undefined,
  sessionUserId: string | undefined,
  header: string | undefined
): boolean => configured !== undefined || header === undefined || sessionUserId === undefined || header === sessionUserId

/** The user a call acts for, given the session's user, this request's header and the call's `_meta`. */
export const callUser = (
  sessionUserId: string | undefined,
  header: string | undefined,
  metaUserId: string | undefined,
  pinned: string | undefined
): { readonly userId: string } | InvalidInput | InsufficientScope => {
  const problem = check(pinned, [["X-Service-User-Id", header], ["_meta[\"dev.service/userId\"]", metaUserId]])
  if (problem !== undefined) return problem
  const userId = sessionUserId ?? header ?? metaUserId ?? pinned
  return userId === undefined
    ? new InvalidInput({
      message: "No user: set SERVICE_USER_ID, send X-Service-User-Id, or name one in _meta[\"dev.service/userId\"]."
    })
    : { userId }
}
