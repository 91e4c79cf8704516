/**
 * The edge around a mounted handler (the MCP gateway, the health routes): whatever escapes the
 * handler, a defect included, leaves as the envelope with the request's id, never as the HTTP
 * server's bare 500 with no body and no `Request-Id` (outside audit: `TRACE /mcp`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { makeEdge } from "../../http/server/Edge.ts"
import { normalized } from "../../domain/Errors.ts"
import { EdgeFailure } from "../../http/server/Envelope.ts"
import type { Gate } from "../../http/server/Gate.ts"

const NO_GATE = { quick: () => undefined, check: () => Effect.die("no key here") } as unknown as Gate

const edgeWith = (mount: (request: HttpServerRequest.HttpServerRequest, requestId: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, EdgeFailure>) =>
  makeEdge({
    routes: [],
    authenticate: () => false,
    gate: NO_GATE,
    mounts: new Map([["/mounted", mount]]),
    bodyLimit: () => 1024,
    endOfTurn: false
  })(Effect.succeed(HttpServerResponse.empty({ status: 204 })))

const answer = (mount: Parameters<typeof edgeWith>[0]) =>
  edgeWith(mount).pipe(
    Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(new Request("http://127.0.0.1/mounted"))),
    Effect.map((response) => {
      const body = response.body
      return { status: response.status, headers: response.headers, text: body._tag === "Uint8Array" ? new TextDecoder().decode(body.body) : "" }
    })
  )

describe("a mounted handler behind the edge", () => {
  it.effect("answers a defect with the envelope's 500 and the request's id", () =>
    Effect.gen(function*() {
      const answered = yield* answer(() => Effect.die(new TypeError("'TRACE' HTTP method is unsupported.")))
      expect(answered.status).toBe(500)
      expect(answered.headers["request-id"]).toMatch(/^req_/)
      expect(JSON.parse(answered.text)).toMatchObject({ error: { code: "provider_unavailable", message: "Internal error.", retryable: true }, requestId: answered.headers["request-id"] })
    }))

  it.effect("answers a refusal with its own status and the request's id", () =>
    Effect.gen(function*() {
      const answered = yield* answer(() => Effect.fail(new EdgeFailure(400, normalized("invalid_input", "No."))))
      expect(answered.status).toBe(400)
      expect(JSON.parse(answered.text)).toMatchObject({ error: { code: "invalid_input", message: "No." }, requestId: answered.headers["request-id"] })
    }))
})
