/**
 * The API's authentication middleware on its own, as a request reaches it without the edge's
 * verdict (http/server/Gate.ts): it reads the bearer key from the headers itself. It is not an
 * HttpApi security scheme (http/api/Middleware.ts), so nothing else would.
 */
import { Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { describe, expect, it } from "vitest"
import { layerMemory } from "../../../infra/access/ApiKeys.ts"
import { Caller, CurrentRequest, type VerifiedKey } from "../../../http/api/Caller.ts"
import { Authentication } from "../../../http/api/Middleware.ts"
import { AuthenticationLive } from "../../../http/server/MiddlewareLive.ts"
import { configLayer } from "../../support/Config.ts"

const KEY = "test_key_middleware_0001"

type Middleware = (
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, never, Caller>,
  options: object
) => Effect.Effect<HttpServerResponse.HttpServerResponse, { readonly _tag: string }, HttpServerRequest.HttpServerRequest>

const answerFor = (headers: Record<string, string>, verified?: VerifiedKey) =>
  Effect.gen(function*() {
    const authenticate = yield* Authentication
    const handler = Effect.map(Caller, (caller) => HttpServerResponse.jsonUnsafe(caller))
    const request = HttpServerRequest.fromWeb(new Request("http://localhost/v1/me", { headers }))
    return yield* (authenticate as unknown as Middleware)(handler, {}).pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, request),
      Effect.provideService(CurrentRequest, { id: "req_test", answerHeaders: undefined, ...(verified !== undefined ? { verifiedKey: verified } : {}) }),
      Effect.flatMap((response) => Effect.succeed({ status: response.status, body: JSON.parse(new TextDecoder().decode((response.body as { body: Uint8Array }).body)) as unknown })),
      Effect.catch((error: { readonly _tag: string }) => Effect.succeed({ status: 0, body: error._tag }))
    )
  }).pipe(
    Effect.provide(AuthenticationLive.pipe(Layer.provideMerge(layerMemory), Layer.provide(configLayer({ SERVICE_API_KEYS: `${KEY}=proj_mw` })))),
    Effect.runPromise
  )

describe("the authentication middleware without the edge's verdict", () => {
  it("takes the bearer key from the headers and acts for its project", async () => {
    expect(await answerFor({ authorization: `Bearer ${KEY}` })).toEqual({ status: 200, body: { keyId: "key_bootstrap_1", projectId: "proj_mw" } })
    expect(await answerFor({ authorization: `bearer \t${KEY} ` })).toMatchObject({ status: 200 })
  })

  it("refuses a missing, empty or unknown key", async () => {
    expect(await answerFor({})).toEqual({ status: 0, body: "AuthMissing" })
    expect(await answerFor({ authorization: "Bearer " })).toEqual({ status: 0, body: "AuthMissing" })
    expect(await answerFor({ authorization: `Basic ${KEY}` })).toEqual({ status: 0, body: "AuthMissing" })
    expect(await answerFor({ authorization: "Bearer not_a_key_of_ours" })).toEqual({ status: 0, body: "AuthExpired" })
  })

  it("takes the edge's verdict as it is, without reading the headers", async () => {
    expect(await answerFor({}, { keyId: "key_edge", projectId: "proj_edge", userId: undefined })).toEqual({ status: 200, body: { keyId: "key_edge", projectId: "proj_edge" } })
  })
})
