/**
 * Implementations of the API middleware: the error envelope, bearer authentication against
 * ApiKeys, and the per-project rate limit with its `RateLimit-*` headers (then the user the
 * request names, and the key's scope on project-wide routes).
 */
import { Cause, Context, Effect, Layer } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { AuthExpired, AuthMissing, InsufficientScope, type InvalidInput, RateLimited } from "../../domain/Errors.ts"
import { ApiKeys, type Principal } from "../../infra/access/ApiKeys.ts"
import { RateLimiter } from "../../infra/access/RateLimiter.ts"
import { Caller, type CallerShape, CurrentRequest } from "../api/Caller.ts"
import { causeResponse } from "./Envelope.ts"
import { bearerToken } from "./Gate.ts"
import { rateHeaders, rateLimitedError, takeTokens } from "../../infra/access/Throttle.ts"
import { Authentication, ErrorEnvelope, isUnpinnedOnly, RateLimit, UsesExecuteBucket } from "../api/Middleware.ts"
import { checkPinned, checkUserId, USER_HEADER } from "./Users.ts"

export const ErrorEnvelopeLive = Layer.succeed(
  ErrorEnvelope,
  (httpEffect) =>
    Effect.catchCause(httpEffect, (cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.flatMap(CurrentRequest, (request) => causeResponse(request?.id ?? "req_unknown", cause)))
)

const callerOf = (principal: Principal): CallerShape => ({ keyId: principal.keyId, projectId: principal.projectId, pinnedUserId: principal.userId })

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const checked = Effect.fnUntraced(function*<A, E, R>(httpEffect: Effect.Effect<A, E, R>, request: HttpServerRequest.HttpServerRequest, verified: Principal | undefined) {
      // A request served without the edge (an in-process handler) is checked here the same way.
      const presented = verified === undefined ? bearerToken(request.headers["authorization"]) : undefined
      if (verified === undefined && presented === undefined) {
        return yield* new AuthMissing({ message: "Send the project API key as Authorization: Bearer <key>." })
      }
      const principal = verified ?? (yield* Effect.orDie(keys.verify(presented ?? "")))
      if (principal === undefined) return yield* new AuthExpired({ message: "The API key is invalid or revoked." })
      return yield* Effect.provideService(httpEffect, Caller, callerOf(principal))
    })
    return Authentication.of((httpEffect) =>
      Effect.withFiber((fiber) => {
        // The edge has verified the key already, on the headers (Gate.ts): the caller is that
        // key, with nothing to suspend for.
        const verified = fiber.getRef(CurrentRequest)?.verifiedKey
        return verified !== undefined
          ? Effect.provideService(httpEffect, Caller, callerOf(verified))
          : checked(httpEffect, Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest), verified)
      }))
  })
)

export const RateLimitLive = Layer.effect(
  RateLimit,
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    // Called once per endpoint when the routes are built; the returned effect runs per request.
    return RateLimit.of((httpEffect, { endpoint, group }) => {
      const execute = Context.get(endpoint.annotations, UsesExecuteBucket)
      const unpinnedOnly = isUnpinnedOnly(group, endpoint)
      const refusedScope = new InsufficientScope({ message: "This route needs an unpinned project key." })
      // Every answer carries the decision's headers (the edge writes them), a refusal and the
      // handler's failures included. Past the bucket (every authenticated request takes its
      // token, decisions.md section 2), the user a request names is judged, then a project-wide
      // route refuses a pinned key, before anything of the request is decoded.
      return Effect.withFiber((fiber) => {
        const caller = Context.getUnsafe(fiber.context, Caller)
        const request = fiber.getRef(CurrentRequest)
        const named = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest).headers[USER_HEADER]
        // A request with a body took its token at the edge, before the body was read.
        const taken = request?.tokenTaken
        return Effect.flatMap(taken === undefined ? takeTokens(limiter, caller.projectId, execute) : Effect.succeed(taken), (decision): Effect.Effect<HttpServerResponse.HttpServerResponse, RateLimited | InsufficientScope | InvalidInput | Effect.Error<typeof httpEffect>, Effect.Services<typeof httpEffect>> => {
          // The edge wrote the headers of the token it took.
          if (request !== undefined && taken === undefined) request.answerHeaders = { ...request.answerHeaders, ...rateHeaders(decision) }
          if (!decision.allowed) {
            const { message, retryAfter } = rateLimitedError(decision, execute)
            return Effect.fail(new RateLimited({ message, retryAfter: retryAfter ?? 1 }))
          }
          const scoped: Effect.Effect<HttpServerResponse.HttpServerResponse, InsufficientScope | Effect.Error<typeof httpEffect>, Effect.Services<typeof httpEffect>> =
            unpinnedOnly && caller.pinnedUserId !== undefined ? Effect.fail(refusedScope) : httpEffect
          return named === undefined
            ? scoped
            : Effect.andThen(checkUserId(named, "X-Service-User-Id"), Effect.andThen(checkPinned(caller, named), scoped))
        })
      })
    })
  })
)
