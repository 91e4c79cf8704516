/**
 * The push ingest route, `POST /v1/ingest/:subscriptionId/:secret` (spec, "Provider push
 * ingestion"; decisions.md section 5), served beside the API: no API key and no request rate
 * limit (the path's secret is the credential, checked by infra/triggers/TriggerIngest.ts, which
 * also holds each project to a budget of bytes: 429 past it), the edge's 1 MiB
 * body ceiling and JSON media type. Every bad credential answers exactly the edge's own 404 for an
 * unknown route, so nothing tells a wrong secret from a missing subscription. The request target
 * is never logged whole: log lines carry it with the secret redacted.
 */
import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { normalized } from "../../domain/Errors.ts"
import { redactIngestPath, TriggerIngest } from "../../infra/triggers/TriggerIngest.ts"
import type { Route } from "./Edge.ts"
import { EdgeFailure, malformedBody, routeNotFound } from "./Envelope.ts"

export const INGEST_ROUTE: Route = { method: "POST", path: "/v1/ingest/:subscriptionId/:secret", ownCredential: true }
const PREFIX = "/v1/ingest/"

export const isIngestPath = (path: string): boolean => path.startsWith(PREFIX)

/** Wraps the API: ingest paths are answered here, everything else by `app`. */
export const makeIngestRoute = Effect.map(TriggerIngest, (triggers) =>
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<HttpServerResponse.HttpServerResponse, E | EdgeFailure, R> => {
      const path = request.url.split("?", 1)[0] ?? "/"
      if (!isIngestPath(path)) return app
      return Effect.gen(function*() {
        const [subscriptionId = "", secret = ""] = path.slice(PREFIX.length).split("/")
        // The edge has read the body already (JSON media type, within the ceiling).
        const rawBytes = yield* request.arrayBuffer.pipe(Effect.mapError(() => malformedBody()))
        const rawBody = yield* request.text.pipe(Effect.mapError(() => malformedBody()))
        const answer = yield* triggers.ingest({
          subscriptionId,
          secret,
          rawBody,
          rawBytes: new Uint8Array(rawBytes),
          slackSignature: request.headers["x-slack-signature"],
          slackTimestamp: request.headers["x-slack-request-timestamp"]
        }).pipe(Effect.orDie)
        yield* Effect.logDebug("ingest answered").pipe(Effect.annotateLogs({ target: redactIngestPath(path), answer: answer._tag }))
        switch (answer._tag) {
          case "Refused":
            return yield* Effect.fail(routeNotFound())
          case "Throttled":
            return yield* Effect.fail(new EdgeFailure(
              429,
              normalized("rate_limited", "This project's ingest budget is spent for now (SERVICE_INGEST_BYTES_PER_MINUTE); retry after the wait.", answer.retryAfter),
              { "retry-after": String(answer.retryAfter) }
            ))
          case "Invalid":
            return yield* Effect.fail(new EdgeFailure(422, normalized("invalid_input", answer.message)))
          case "Challenge":
            return HttpServerResponse.jsonUnsafe({ challenge: answer.challenge }, { status: 200 })
          case "Accepted":
            return HttpServerResponse.jsonUnsafe({ kind: "accepted", accepted: answer.accepted, duplicates: answer.duplicates }, { status: 202 })
        }
      })
    })
)
