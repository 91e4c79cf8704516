/**
 * The API's middleware contracts (implementations in MiddlewareLive.ts). Every endpoint gets,
 * from the outside in: the error envelope, bearer authentication, then the project rate limit
 * (and, on project-wide routes, the key's scope), all before the request's input is decoded.
 */
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import {
  AuthExpired,
  AuthMissing,
  InsufficientScope,
  InvalidInput,
  NotFound,
  NotSupported,
  ProviderError,
  ProviderUnavailable,
  RateLimited,
  StateConflict,
  Timeout
} from "../../domain/Errors.ts"
import { Caller } from "./Caller.ts"

/** Every typed failure a handler may raise; the envelope middleware answers all of them. */
export const RequestFailures = [
  InvalidInput,
  StateConflict,
  AuthMissing,
  AuthExpired,
  InsufficientScope,
  NotFound,
  RateLimited,
  Timeout,
  ProviderUnavailable,
  ProviderError,
  NotSupported
] as const

export class ErrorEnvelope extends HttpApiMiddleware.Service<ErrorEnvelope>()("app/http/ErrorEnvelope", {
  error: RequestFailures
}) {}

/**
 * Bearer authentication. Not declared as an HttpApi security scheme: the framework would then
 * decode the header into a `Redacted` on every request (a WeakMap entry each, a measurable part
 * of a request's cost under load) for a key the edge has already checked (Gate.ts). The OpenAPI
 * document declares the scheme itself (OpenApiDocument.ts).
 */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: Caller }>()(
  "app/http/Authentication",
  { error: [AuthMissing, AuthExpired] }
) {}

export class RateLimit extends HttpApiMiddleware.Service<RateLimit, { requires: Caller }>()("app/http/RateLimit", {
  error: [RateLimited, InsufficientScope, InvalidInput]
}) {}

/** Endpoint annotation: the request takes a token from the execute bucket, not the standard one. */
export class UsesExecuteBucket extends Context.Reference<boolean>("app/http/UsesExecuteBucket", {
  defaultValue: () => false
}) {}

/**
 * Group or endpoint annotation: a project-wide route (the file list, the trigger history, every
 * webhook route; spec, Authentication 3), which a user-pinned key gets 403 on, after its token
 * is taken and before anything of the request is decoded.
 */
export class UnpinnedOnly extends Context.Reference<boolean>("app/http/UnpinnedOnly", {
  defaultValue: () => false
}) {}

/** Whether an endpoint is project-wide, by its own annotation or its group's. */
export const isUnpinnedOnly = (
  group: { readonly annotations: Context.Context<never> },
  endpoint: { readonly annotations: Context.Context<never> }
): boolean =>
  Context.get(group.annotations, UnpinnedOnly) || Context.get(endpoint.annotations, UnpinnedOnly)
