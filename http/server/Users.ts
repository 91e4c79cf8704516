/**
 * Which user a request acts for (spec, Authentication 3 and 5): a pinned key acts only for its
 * user and any other named user is 403; an unpinned key acts for whoever the request names.
 */
import { Effect } from "effect"
import { CHOSEN_ID } from "../../domain/Ids.ts"
import { InsufficientScope, InvalidInput } from "../../domain/Errors.ts"
import type { CallerShape } from "../api/Caller.ts"

export const USER_HEADER = "x-service-user-id"

const invalidUserId = (where: string) => new InvalidInput({ message: `${where} must match [A-Za-z0-9_.-]{1,64}.` })
const pinnedElsewhere = () => new InsufficientScope({ message: "This key is pinned to another user." })

export const checkUserId = (value: string, where: string): Effect.Effect<string, InvalidInput> =>
  CHOSEN_ID.test(value) ? Effect.succeed(value) : Effect.fail(invalidUserId(where))

const isPinnedElsewhere = (caller: CallerShape, named: string | undefined) =>
  caller.pinnedUserId !== undefined && named !== undefined && named !== caller.pinnedUserId

/** A pinned key naming anyone but its own user is refused, wherever the name appears. */
export const checkPinned = (caller: CallerShape, named: string | undefined): Effect.Effect<void, InsufficientScope> =>
  isPinnedElsewhere(caller, named) ? Effect.fail(pinnedElsewhere()) : Effect.void

/**
 * The acting user: the explicit value, else the header, else the pinned user; may be undefined.
 * Checked in this order: the explicit value's shape, the header's, then the pin against each.
 */
export const actingUser = (
  caller: CallerShape,
  sources: { readonly explicit?: string | undefined; readonly header?: string | undefined }
): Effect.Effect<string | undefined, InsufficientScope | InvalidInput> => {
  const { explicit, header } = sources
  if (explicit !== undefined && !CHOSEN_ID.test(explicit)) return Effect.fail(invalidUserId("userId"))
  if (header !== undefined && !CHOSEN_ID.test(header)) return Effect.fail(invalidUserId("X-Service-User-Id"))
  if (isPinnedElsewhere(caller, explicit) || isPinnedElsewhere(caller, header)) return Effect.fail(pinnedElsewhere())
  return Effect.succeed(explicit ?? header ?? caller.pinnedUserId)
}
