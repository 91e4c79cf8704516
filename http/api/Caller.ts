/**
 * Who is calling: provided by the authentication middleware to every handler, and the request
 * itself (its id, its answer's headers), provided by the edge to everything below it.
 */
import { Context } from "effect"
import type { Decision } from "../../domain/TokenBucket.ts"

export interface CallerShape {
  readonly keyId: string
  readonly projectId: string
  /** The pinned user of a user-pinned key; undefined for an unpinned (project-authority) key. */
  readonly pinnedUserId: string | undefined
}

export class Caller extends Context.Service<Caller, CallerShape>()("app/http/Caller") {}

/** The request being answered, as the edge opened it. */
export interface RequestMeta {
  readonly id: string
  /**
   * Headers every answer to this request carries, whatever it turns out to be (a handler's
   * failure, a refusal): set below the edge (the rate limit's), written by the edge with
   * `Request-Id` in one copy of the response's headers.
   */
  answerHeaders: Readonly<Record<string, string>> | undefined
  /** The key, verified by the edge on the request's headers before its body was read. */
  verifiedKey?: VerifiedKey | undefined
  /**
   * The rate limit's decision when the edge has taken the request's token already (a request
   * with a body takes it before the body is read): the API's rate limit reads it instead of
   * taking a second one.
   */
  tokenTaken?: Decision | undefined
}

/** A key the edge has verified: what the authentication middleware turns into the `Caller`. */
export interface VerifiedKey {
  readonly keyId: string
  readonly projectId: string
  readonly userId: string | undefined
}

/** Provided by the edge to everything below it; undefined outside a request. */
export class CurrentRequest extends Context.Reference<RequestMeta | undefined>("app/http/CurrentRequest", {
  defaultValue: () => undefined
}) {}
