/**
 * Who is calling: provided by the authentication middleware to every handler, and the request's
 * id, provided by the edge to everything below it.
 */
import { Context } from "effect"

export interface CallerShape {
  readonly keyId: string
  readonly projectId: string
  /** The pinned user of a user-pinned key; undefined for an unpinned (project-authority) key. */
  readonly pinnedUserId: string | undefined
}

export class Caller extends Context.Service<Caller, CallerShape>()("app/http/Caller") {}

export class RequestId extends Context.Reference<string>("app/http/RequestId", { defaultValue: () => "req_unknown" }) {}
