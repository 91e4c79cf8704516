/**
 * The one place where failures become HTTP answers: the status of each typed failure, the
 * `{error, requestId}` body, and the mapping of everything that is not a typed failure (decode
 * errors, oversize bodies, defects) onto the same envelope.
 */
import { Cause, Effect, SchemaAST } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import { isServiceFailure, normalized, type NormalizedError, toNormalized } from "../../domain/Errors.ts"
import { RequestFailures } from "../api/Middleware.ts"
import { isStoreOutage, storeUnavailableAnswer } from "../../infra/eventlog/StoreOutage.ts"

const httpApiStatus = SchemaAST.resolveAt<number>("httpApiStatus")

/**
 * Each typed failure's status by its tag, read once from the `httpApiStatus` annotation its class
 * carries (domain/Errors.ts, decisions.md section 2), the one HttpApi reads for the OpenAPI
 * document: the status has a single source.
 */
const STATUS: ReadonlyMap<string, number> = new Map(RequestFailures.map((failure) => {
  const tag = SchemaAST.resolveIdentifier(failure.ast)
  const status = httpApiStatus(failure.ast)
  if (tag === undefined || status === undefined) throw new Error(`a request failure lacks its tag or its httpApiStatus: ${String(tag)}`)
  return [tag, status]
}))

/** A failure the edge raises itself, with a status that the code alone does not give. */
export class EdgeFailure {
  readonly _tag = "EdgeFailure"
  readonly status: number
  readonly error: NormalizedError
  readonly headers: Record<string, string>
  constructor(status: number, error: NormalizedError, headers: Record<string, string> = {}) {
    this.status = status
    this.error = error
    this.headers = headers
  }
}

export const malformedBody = () => new EdgeFailure(400, normalized("invalid_input", "The request body is not valid JSON."))
/** Node's request timeout: the request (its body) did not arrive in time. */
export const requestTimeout = () =>
  new EdgeFailure(408, normalized("timeout", "The request was not received in time."), { connection: "close" })
export const bodyTooLarge = (limit: number) =>
  new EdgeFailure(413, normalized("invalid_input", `The request body exceeds ${limit} bytes.`), { connection: "close" })
/** The 415 of a body that is not JSON in UTF-8 (domain/MediaType.ts names the other causes). */
export const NOT_JSON = "The request body must be application/json (in UTF-8)."
export const unsupportedMediaType = (message = NOT_JSON) =>
  new EdgeFailure(415, normalized("invalid_input", message))
export const methodNotAllowed = (allowed: ReadonlyArray<string>) =>
  new EdgeFailure(405, normalized("invalid_input", "The method is not allowed on this path."), { allow: allowed.join(", ") })
export const routeNotFound = () => new EdgeFailure(404, normalized("not_found", "No such route."))
/** A path of a known route whose id the router cannot take (too long, a bad escape). */
export const idNotFound = (message = "Nothing was found for the id in this path.") => new EdgeFailure(404, normalized("not_found", message))
const internal = () => new EdgeFailure(500, { code: "provider_unavailable", message: "Internal error.", retryable: true })

/**
 * The store does not answer (Postgres restarting or hanging, a connection cut): 503 with a
 * retryable envelope and `Retry-After`, so that clients retry instead of reporting a failure.
 * Nothing was accepted (an answer other than this one means the request's effect was recorded),
 * unless Postgres hung after the request's commit had reached it (docs/operations.md).
 */
export const storeUnavailable = () => {
  const { status, error, headers } = storeUnavailableAnswer()
  return new EdgeFailure(status, error, headers)
}

export const envelopeResponse = (requestId: string, status: number, error: NormalizedError, headers: Record<string, string> = {}) => {
  const response = HttpServerResponse.jsonUnsafe({ error, requestId }, { status })
  return Object.keys(headers).length === 0 ? response : HttpServerResponse.setHeaders(response, headers)
}

const schemaMessage = (error: HttpApiSchemaError): string => {
  const text = String(error.cause?.message ?? error.message ?? "")
  const where = error.kind === "Payload" ? "body" : error.kind === "Query" ? "query" : error.kind === "Params" ? "path" : "request"
  // Schema messages name the offending path and expectation; cap their length for the client.
  return `Invalid ${where}: ${text.length > 500 ? `${text.slice(0, 500)}…` : text}`
}

export const isJsonSyntaxFailure = (error: HttpApiSchemaError): boolean =>
  error.kind === "Payload" && String(error.cause?.message ?? "").includes("Expected a valid JSON body")

/** What answer a failure gets; `undefined` means an unexpected defect. */
export const classify = (failure: unknown): EdgeFailure | undefined => {
  if (failure instanceof EdgeFailure) return failure
  if (HttpApiSchemaError.is(failure)) {
    // A path parameter is an id (http/api/PathId.ts): one that no id can be names nothing.
    if (failure.kind === "Params") return idNotFound()
    return isJsonSyntaxFailure(failure) ? malformedBody() : new EdgeFailure(422, normalized("invalid_input", schemaMessage(failure)))
  }
  if (isStoreOutage(failure)) return storeUnavailable()
  if (isServiceFailure(failure)) {
    const error = toNormalized(failure)
    const status = STATUS.get(failure._tag) ?? 500
    const headers: Record<string, string> = error.retryAfter !== undefined ? { "retry-after": String(error.retryAfter) } : {}
    return new EdgeFailure(status, error, headers)
  }
  return undefined
}

/**
 * Answers a failed request. Typed failures come first; among defects, known ones (decode
 * errors) are still answered precisely; anything else is logged with the request id and
 * answered as an opaque 500.
 */
export const causeResponse = (requestId: string, cause: Cause.Cause<unknown>) =>
  Effect.map(causeFailure(requestId, cause), (failure) => envelopeResponse(requestId, failure.status, failure.error, failure.headers))

/** The refusal a failed request gets (see causeResponse); an unexpected one is logged first. */
export const causeFailure = (requestId: string, cause: Cause.Cause<unknown>): Effect.Effect<EdgeFailure> =>
  Effect.suspend(() => {
    for (const reason of cause.reasons) {
      const value = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
      const known = classify(value)
      if (known !== undefined) return Effect.succeed(known)
    }
    return Effect.logError("unhandled failure", cause).pipe(Effect.annotateLogs({ requestId }), Effect.as(internal()))
  })
