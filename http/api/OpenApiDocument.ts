/**
 * The OpenAPI 3.1 document served at `/openapi.json` (and read by `/docs`): Effect's document
 * generated from the contract (`Api`), completed with what the endpoint schemas alone do not say.
 *
 * - Errors: every error answer is the normalized envelope (`ErrorEnvelope`), never an internal
 *   tagged error. Each operation lists the statuses it can answer: the edge's own for every route
 *   (400, 413, 415 and 422 for whatever body is sent: text the log cannot keep, or fields sent
 *   to a route that takes none; 405, 500, 505; Node's 408 and 431), authentication, the project rate
 *   limit and the store for keyed routes (401, 403, 422 for a malformed `X-Service-User-Id`, 429,
 *   503 while the store does not answer), 404 where a path names a
 *   resource, and the failures its endpoint declares in the contract (`error:`, each class
 *   carrying its `httpApiStatus`).
 * - Query limits are documented as the integers they are (1..100, default 100), not strings.
 * - `POST /v1/execute`: the request body lists, per catalog tool, the input schema it takes.
 * - Examples for execute and webhook bodies, typed against their schemas.
 * - The push ingest route, served beside the API (http/server/IngestHttp.ts).
 * - `webhooks`: the delivery each endpoint receives, with its envelope and signature headers.
 */
import { Context, Schema, SchemaAST } from "effect"
import { type HttpApiEndpoint, OpenApi } from "effect/http-api"
import { listTools, listTriggers, toWireName } from "../../domain/catalog/index.ts"
import { NormalizedError } from "../../domain/Errors.ts"
import { CHOSEN_ID } from "../../domain/Ids.ts"
import { MAX_POLL_SECONDS } from "../../domain/triggers/Polling.ts"
import { FIXED_SUBSCRIPTIONS } from "../../domain/webhooks/WebhookEndpoint.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { Api } from "./Api.ts"
import type { ExecuteRequest } from "./ExecutionsApi.ts"
import { Authentication, UsesExecuteBucket } from "./Middleware.ts"
import { DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT } from "./Query.ts"
import type { CreatedWebhookEndpoint, CreateWebhookRequest } from "./WebhooksApi.ts"

// oxlint-disable-next-line typescript/no-explicit-any -- the document is walked and edited as plain JSON
type Json = Record<string, any>

/** `{error: {code, message, retryable, retryAfter?}, requestId}`: the body of every error answer. */
export const ErrorEnvelope = Schema.Struct({
  error: NormalizedError,
  requestId: Schema.String.annotate({ description: "`req_<id>`, also sent as the `Request-Id` header." })
}).annotate({
  description: "Every error answer. Clients act on `error.code` and `error.retryable`, not on the HTTP status alone."
})

/** The request body of every webhook delivery (spec, "Webhook event envelope"). */
export const WebhookEnvelope = Schema.Struct({
  id: Schema.String.annotate({ description: "The event id, stable across retries: deduplicate on it. Same as `Service-Webhook-Id`." }),
  type: Schema.String.annotate({
    description: "`execution.succeeded`, `execution.failed`, `execution.cancelled`, `voice.session.event`, " +
      "`voice.transcript.ready`, `voice.observer.failed`, or `trigger.<toolkit>.<name>`."
  }),
  createdAt: Schema.String.annotate({ description: "ISO 8601 time of the event." }),
  projectId: Schema.String,
  data: Schema.Json.annotate({
    description: "Depends on `type`: for `execution.*`, the terminal execution record; for `trigger.*`, " +
      "`{subscriptionId, eventId, trigger, userId, connectionId, occurredAt, payload}`, the provider event normalized as `payload`."
  })
})
export type WebhookEnvelope = typeof WebhookEnvelope.Type

/** What each error status means here, and the codes it carries (decisions.md section 2). */
const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: "The body is not valid JSON (`invalid_input`).",
  401: "No key, or a key that is not valid (`auth_missing`, `auth_expired`). Carries `WWW-Authenticate: Bearer`.",
  403: "The key may not do this: a user-pinned key on a project-wide route or naming another user (`auth_insufficient_scope`).",
  404: "No such resource in this project: missing, expired, another project's, or a malformed id (`not_found`).",
  405: "The path exists but not with this method (`invalid_input`). Carries `Allow`.",
  408: "The request's headers or body did not arrive in time (`timeout`); the connection is closed.",
  409: "The resource's state forbids the command (`invalid_input`).",
  413: "The body exceeds the route's ceiling (`invalid_input`); the connection is closed.",
  415: "The body's `Content-Type` is not `application/json` (a `+json` type included), or names a charset other than " +
    "UTF-8, or the body is content-encoded (a `Content-Encoding` other than `identity`), or has a transfer coding " +
    "other than `chunked` (`invalid_input`).",
  422: "The request does not match its schema, names something unknown, or holds what cannot be stored (`invalid_input`).",
  429: "The project's rate limit (`rate_limited`); `Retry-After` and `error.retryAfter` say when to retry.",
  431: "The request's headers are larger than the server takes (`invalid_input`); the connection is closed.",
  500: "An internal failure (`provider_unavailable`, retryable); the request may be retried.",
  501: "Not supported by this deployment (`not_supported`).",
  502: "The provider failed or refused (`provider_unavailable`, `provider_error`).",
  503: "The service's store does not answer, as while Postgres restarts or hangs (`provider_unavailable`, retryable); nothing was recorded, unless Postgres hung after the request's commit reached it (retry with the same `Idempotency-Key`). `Retry-After` says when to retry.",
  504: "The provider did not answer in time (`timeout`).",
  505: "The request line names an HTTP version other than 1.0 or 1.1 (`invalid_input`); the connection is closed."
}

const STATUS_HEADERS: Readonly<Record<number, Json>> = {
  401: { "WWW-Authenticate": { schema: { type: "string", const: "Bearer" } } },
  405: { Allow: { description: "The methods the path serves.", schema: { type: "string" } } },
  429: { "Retry-After": { description: "Whole seconds to wait.", schema: { type: "integer", minimum: 1 } } },
  503: { "Retry-After": { description: "Whole seconds to wait.", schema: { type: "integer", minimum: 1 } } }
}

const REQUEST_ID_HEADER: Json = { "Request-Id": { description: "`req_<id>`, the same as the body's `requestId`.", schema: { type: "string" } } }
const RATE_LIMIT_HEADERS: Json = {
  "RateLimit-Limit": { description: "The bucket's capacity.", schema: { type: "integer" } },
  "RateLimit-Remaining": { description: "Whole requests left.", schema: { type: "integer" } },
  "RateLimit-Reset": { description: "Unix seconds when the bucket is full again.", schema: { type: "integer" } }
}

const httpApiStatus = SchemaAST.resolveAt<number>("httpApiStatus")

/** The statuses an endpoint can answer with the envelope (see the header). */
export const errorStatuses = (endpoint: HttpApiEndpoint.Top, keyed: boolean): ReadonlyArray<number> => {
  // A body is checked wherever one is sent, even to a route that takes none.
  // Node refuses a slow request (408) or oversized headers (431) before any route is chosen, and
  // the edge a request line of another HTTP version (505).
  const statuses = new Set<number>([400, 405, 408, 413, 415, 422, 431, 500, 505])
  // A key is looked up in the store when it is not cached: 503 while the store is away.
  if (keyed) for (const status of [401, 403, 429, 503]) statuses.add(status)
  if (endpoint.path.includes(":")) statuses.add(404)
  for (const error of endpoint.error) {
    const status = httpApiStatus(error.ast)
    if (status !== undefined) statuses.add(status)
  }
  return [...statuses].toSorted((a, b) => a - b)
}

const RETRY_WHEN = "`Retry-After` and `error.retryAfter` say when to retry."

/**
 * What a 429 of this endpoint can mean (`rate_limited`, decisions.md section 2): the bucket it takes
 * a token from (infra/access/Throttle.ts), and past it what the endpoint itself refuses with 429.
 */
const tooManyRequests = (endpoint: HttpApiEndpoint.Top, operationId: string): string => {
  if (Context.get(endpoint.annotations, UsesExecuteBucket)) {
    return "Refused before anything is recorded (`rate_limited`): the project's execute bucket is empty " +
      "(SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE and SERVICE_RATE_LIMIT_EXECUTE_BURST; shared by all the project's keys " +
      "and by MCP tool calls); or the project's daily execution quota is used up " +
      "(SERVICE_RATE_LIMIT_DAILY_EXECUTIONS, off by default; it resets at 00:00 UTC); or, for a sync execute, the " +
      "tool's toolkit has its cap of concurrent executions per project full (`retryAfter` 1; an async execute waits " +
      "pending instead). " + RETRY_WHEN
  }
  const standard = "The project's standard bucket is empty (`rate_limited`): every request with a key but `POST /v1/execute` " +
    "takes a token from it (SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE and SERVICE_RATE_LIMIT_REQUEST_BURST; shared by all " +
    "the project's keys)."
  if (operationId === "files.stage") {
    return standard + " Or the project's live staged files together with this one would pass " +
      "SERVICE_FILE_PROJECT_MAX_BYTES; `retryAfter` is then the seconds until its first file expires. " +
      RETRY_WHEN
  }
  return `${standard} ${RETRY_WHEN}`
}

/** Answered before the key is read (framing, Node's own refusals) or for the key itself: no bucket was taken. */
const BEFORE_THE_BUCKET = new Set([401, 408, 431, 505])

/** An error answer; behind a key, its bucket's `RateLimit-*` headers too (where the key got that far). */
const errorResponse = (status: number, keyed = false): Json => ({
  description: STATUS_TEXT[status] ?? "An error.",
  headers: { ...REQUEST_ID_HEADER, ...(keyed && !BEFORE_THE_BUCKET.has(status) ? RATE_LIMIT_HEADERS : {}), ...STATUS_HEADERS[status] },
  content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } }
})

/** JSON Schema references to `$defs` pointed at the document's components instead. */
const rewrite = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(rewrite)
    : typeof value === "object" && value !== null
    ? Object.fromEntries(Object.entries(value).map(([key, inner]) =>
      key === "$ref" && typeof inner === "string"
        ? [key, inner.replace("#/$defs/", "#/components/schemas/")]
        : [key, rewrite(inner)]
    ))
    : value

/** A schema as JSON Schema, its definitions moved into the document's components. */
const jsonSchema = (spec: Json, schema: Schema.Top): Json => {
  const document = Schema.toJsonSchemaDocument(schema)
  for (const [name, definition] of Object.entries(document.definitions)) spec.components.schemas[name] = rewrite(definition)
  return rewrite(document.schema) as Json
}

const EXECUTE_REQUEST_EXAMPLE: ExecuteRequest = { tool: "demo.echo", input: { message: "hello" }, userId: "user_1", mode: "sync" }
/** A finished sync run, whatever its outcome. */
const FINISHED_SYNC = {
  executionId: "exe_01m88zvhq45dhmh41k4zhc3rcpfzssw8",
  projectId: "proj_dev",
  userId: "user_1",
  tool: "demo.echo",
  toolVersion: "1.0.0",
  catalogVersion: "2026-11-28.1",
  mode: "sync",
  createdAt: "2026-11-25T09:16:13.924Z",
  startedAt: "2026-11-25T09:16:13.924Z",
  completedAt: "2026-11-25T09:16:13.925Z",
  latencyMs: 1
} as const
const EXECUTION_EXAMPLE: ExecutionRecord = { ...FINISHED_SYNC, status: "succeeded", output: { message: "hello" } }
const PENDING_EXAMPLE: ExecutionRecord = {
  executionId: "exe_01m88zvhqkr49exg9181dec0bdhrv94m",
  projectId: "proj_dev",
  userId: "user_1",
  tool: "demo.sleep",
  toolVersion: "1.0.0",
  catalogVersion: "2026-11-28.1",
  mode: "async",
  status: "pending",
  createdAt: "2026-11-25T09:16:13.939Z"
}
const CREATE_WEBHOOK_EXAMPLE: typeof CreateWebhookRequest.Type = { url: "https://example.com/hooks", events: ["execution.completed"] }
const CREATED_WEBHOOK_EXAMPLE: typeof CreatedWebhookEndpoint.Type = {
  endpointId: "whe_01m88zvhr8rnvrf3cj0q9abnyacw16g7",
  url: "https://example.com/hooks",
  events: ["execution.completed"],
  active: true,
  createdAt: "2026-11-25T09:16:13.960Z",
  updatedAt: "2026-11-25T09:16:13.960Z",
  secretPrefix: "whsec_UsYz",
  secret: "whsec_UsYzYGqoRIovvP6Bn-6HCCQdZNjm5eFjP4j5l9xKBD8"
}
export const WEBHOOK_ENVELOPE_EXAMPLE: WebhookEnvelope = {
  id: "evt_01m88zvhr9b6c2yq3n0k8t5w7xs4d1fe",
  type: "execution.succeeded",
  createdAt: EXECUTION_EXAMPLE.completedAt ?? "",
  projectId: "proj_dev",
  data: EXECUTION_EXAMPLE
}

/** Per webhook type, an envelope of what that type carries. */
const FAILED_EXAMPLE: ExecutionRecord = {
  ...FINISHED_SYNC,
  executionId: "exe_01m88zvhs2k7d0q5xw3n8b4t6ya9c1mf",
  tool: "demo.fail",
  status: "failed",
  error: { code: "provider_unavailable", message: "The provider answered 503.", retryable: true }
}
const CANCELLED_EXAMPLE: ExecutionRecord = {
  ...PENDING_EXAMPLE,
  startedAt: "2026-11-25T09:16:13.940Z",
  completedAt: "2026-11-25T09:16:15.002Z",
  latencyMs: 1062,
  status: "cancelled",
  error: { code: "execution_cancelled", message: "The execution was cancelled.", retryable: false },
  cancellation: { dispatchMayHaveBegun: true }
}
const TRIGGER_PAYLOADS: Readonly<Record<string, unknown>> = {
  "demo.event": { type: "ping" },
  "slack.message_posted": { channel: "C0123456789", user: "U0123456789", text: "hello", ts: "1764061573.000100" },
  "github.issue_opened": {
    owner: "octo-org",
    repo: "octo-repo",
    id: 3_112_345_678,
    number: 42,
    title: "Found a bug",
    url: "https://github.com/octo-org/octo-repo/issues/42",
    user: "octocat",
    labels: ["bug"],
    createdAt: "2026-11-25T09:16:10.000Z"
  }
}
const webhookExample = (type: string): WebhookEnvelope => {
  if (type === "execution.failed") return { ...WEBHOOK_ENVELOPE_EXAMPLE, id: "evt_01m88zvhs3w8e1r6yx4p9c5u7zb0d2ng", type, data: FAILED_EXAMPLE }
  if (type === "execution.cancelled") return { ...WEBHOOK_ENVELOPE_EXAMPLE, id: "evt_01m88zvhs4x9f2s7za5q0d6v8ac1e3ph", type, data: CANCELLED_EXAMPLE }
  if (!type.startsWith("trigger.")) return { ...WEBHOOK_ENVELOPE_EXAMPLE, type }
  const trigger = type.slice("trigger.".length)
  const eventId = "evt_trigger_01m88zvhs5y0g3t8zb6r1e7w9bd2f4qj"
  return {
    id: eventId,
    type,
    createdAt: "2026-11-25T09:16:13.990Z",
    projectId: "proj_dev",
    data: {
      subscriptionId: "trgsub_01m88zvhs6z1h4v9zc7s2f8x0ce3g5rk",
      eventId,
      trigger,
      userId: "user_1",
      connectionId: trigger.startsWith("demo.") ? null : "conn_01m88zvhs7a2j5w0zd8t3g9y1df4h6sm",
      occurredAt: "2026-11-25T09:16:10.000Z",
      payload: (TRIGGER_PAYLOADS[trigger] ?? {}) as Schema.Json
    }
  }
}

/** Examples by operation id and where they go: the request body, or the answer of a status. */
export const EXAMPLES: Readonly<Record<string, { readonly request?: unknown; readonly responses?: Readonly<Record<string, unknown>> }>> = {
  "executions.execute": { request: EXECUTE_REQUEST_EXAMPLE, responses: { 200: EXECUTION_EXAMPLE, 202: PENDING_EXAMPLE } },
  "executions.get": { responses: { 200: EXECUTION_EXAMPLE } },
  "webhooks.create": { request: CREATE_WEBHOOK_EXAMPLE, responses: { 201: CREATED_WEBHOOK_EXAMPLE } }
}

const setExample = (content: Json | undefined, example: unknown) => {
  const media = content?.["application/json"]
  if (media !== undefined) media.example = example
}

/** The execute body's `input`, per tool: one alternative for each catalog tool, by either of its names. */
const toolInputs = (): Json => ({
  oneOf: listTools().map((tool) => ({
    title: tool.name,
    properties: { tool: { enum: [tool.name, toWireName(tool.name)] }, input: tool.inputSchema }
  }))
})

const SIGNATURE_HEADERS: Json = [
  { name: "Service-Webhook-Id", description: "The event id (the envelope's `id`), stable across retries.", schema: { type: "string" } },
  { name: "Service-Webhook-Timestamp", description: "Decimal Unix seconds of this attempt.", schema: { type: "string", pattern: "^[0-9]+$" } },
  {
    name: "Service-Webhook-Signature",
    description: "`v1=` and the lowercase hex HMAC-SHA256, keyed by the endpoint's secret, of `<timestamp>.<raw body>`. " +
      "Verify against the exact raw body in constant time, and refuse timestamps more than five minutes away.",
    schema: { type: "string", pattern: "^v1=[0-9a-f]{64}$" }
  },
  { name: "Service-Timestamp", description: "Compatibility copy of `Service-Webhook-Timestamp`.", schema: { type: "string" } },
  { name: "Service-Signature", description: "Compatibility copy of `Service-Webhook-Signature`.", schema: { type: "string" } }
].map((header) => ({ ...header, in: "header", required: true }))

const webhookOperation = (type: string, summary: string): Json => ({ post: {
  summary,
  description: (type.startsWith("trigger.")
    ? "Sent to the active endpoints that the trigger event's subscription names and that subscribe to this type (or `trigger.*`), "
    : "Sent to every active endpoint subscribed to this type (or `execution.completed`), ") +
    "one delivery at a time per endpoint, at least once. " +
    "Any 2xx acknowledges it; anything else, a timeout (10 s) or a transport failure is retried after 30 s, 2 min, " +
    "10 min and 1 h, five attempts in all.",
  operationId: `webhook.${type}`,
  parameters: SIGNATURE_HEADERS,
  requestBody: {
    required: true,
    content: { "application/json": { schema: { $ref: "#/components/schemas/WebhookEnvelope" }, example: webhookExample(type) } }
  },
  responses: { "2XX": { description: "Acknowledged." }, default: { description: "Not acknowledged: retried on the schedule." } }
} })

const INGEST_PATH: Json = {
  post: {
    tags: ["subscriptions"],
    operationId: "ingest",
    summary: "Receive a provider's push event",
    description: "For providers, not API clients: no API key; the secret in the path authenticates, so treat the whole URL as a " +
      "secret. Any bad credential (missing, inactive or polling subscription, wrong secret) answers the same 404. " +
      "`{type: \"url_verification\", challenge}` is answered with the challenge; an `event_callback` is accepted for delivery.",
    security: [],
    parameters: [
      { name: "subscriptionId", in: "path", required: true, schema: { type: "string" } },
      { name: "secret", in: "path", required: true, schema: { type: "string" } }
    ],
    requestBody: { required: true, content: { "application/json": { schema: { type: "object" } } } },
    responses: {
      200: {
        description: "A URL verification, answered.",
        headers: REQUEST_ID_HEADER,
        content: { "application/json": { schema: { type: "object", properties: { challenge: { type: "string" } }, required: ["challenge"] } } }
      },
      202: {
        description: "Accepted into the webhook pipeline.",
        headers: REQUEST_ID_HEADER,
        content: {
          "application/json": {
            schema: {
              type: "object",
              properties: { kind: { const: "accepted" }, accepted: { type: "integer" }, duplicates: { type: "integer" } },
              required: ["kind", "accepted", "duplicates"]
            }
          }
        }
      },
      // A body that is not JSON is 422 here, whatever its Content-Type, like any other body ingest
      // refuses (decisions.md section 5): never 415.
      ...Object.fromEntries([400, 404, 405, 408, 413, 422, 431, 500, 503, 505].map((status) => [status, errorResponse(status)])),
      400: {
        ...errorResponse(400),
        description: "The request's framing is refused, as several `Host` headers (`invalid_input`); a body that is not JSON is 422 here."
      },
      429: {
        ...errorResponse(429),
        description: "The project's ingest budget is spent for now (`rate_limited`): bytes of accepted bodies, once per webhook " +
          "endpoint, per minute and process (SERVICE_INGEST_BYTES_PER_MINUTE). `Retry-After` and `error.retryAfter` say when to retry."
      }
    }
  }
}

/** `{status, checks}`: a probe's answer (http/server/Health.ts, infra/observability/Readiness.ts). */
const PROBE_REPORT: Json = {
  type: "object",
  properties: {
    status: { enum: ["ok", "unavailable"] },
    checks: { type: "object", additionalProperties: { type: "object", properties: { status: { enum: ["ok", "failing"] } }, required: ["status"] } }
  },
  required: ["status", "checks"]
}

/** An operator's route, served beside the API without a key; GET and HEAD only. */
const probe = (operationId: string, summary: string, description: string, responses: Json): Json => ({
  get: {
    tags: ["operations"],
    operationId,
    summary,
    description: `${description} For probes and scrapers: no key, no rate limit; GET and HEAD only (405 otherwise).`,
    security: [],
    responses: {
      ...Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, { ...response, headers: REQUEST_ID_HEADER }])),
      // The edge's own refusals reach them as any route (Host, HTTP version; Node's 408 and 431).
      ...Object.fromEntries([400, 405, 408, 431, 500, 505].map((status) => [status, errorResponse(status)]))
    }
  }
})

/** The operator's routes (decisions.md section 9): not the API's contract, but served by it. */
const OPERATION_PATHS: Json = {
  "/healthz": probe("healthz", "Liveness", "The process answers.", {
    200: { description: "Alive.", content: { "application/json": { schema: PROBE_REPORT } } }
  }),
  "/readyz": probe("readyz", "Readiness", "Whether the process should get traffic: the store reachable, its migrations applied, " +
    "projections caught up, the runner lease held, not stopping.", {
    200: { description: "Ready.", content: { "application/json": { schema: PROBE_REPORT } } },
    503: { description: "Not ready; `checks` says which check fails.", content: { "application/json": { schema: PROBE_REPORT } } }
  }),
  "/metrics": probe("metrics", "Metrics", "Every metric of the service in Prometheus text (docs/operations.md lists them).", {
    200: { description: "Prometheus text format 0.0.4.", content: { "text/plain": { schema: { type: "string" } } } }
  })
}

/** The webhook event types an endpoint may subscribe to (domain/webhooks/WebhookEndpoint.ts). */
const webhookEvents = (events: Json): Json => ({
  ...events,
  minItems: 1,
  uniqueItems: true,
  items: { ...events.items, enum: [...FIXED_SUBSCRIPTIONS, ...listTriggers().map((trigger) => `trigger.${trigger.name}`)] }
})

/**
 * A receiver URL: the service reads it as a browser does (the WHATWG parser: spaces around it
 * dropped, a Unicode host taken as punycode, characters RFC 3986 would refuse escaped), so the
 * document asks only for the https scheme; `format: uri` would rule out URLs the service takes.
 */
const webhookUrl = (url: Json): Json => ({
  ...url,
  pattern: "^[\\u0000-\\u0020]*[Hh][Tt][Tt][Pp][Ss]:",
  description: "An absolute https URL (receivers are HTTPS only), read as a browser reads it."
})

/**
 * Rules that handlers apply to body fields, past the contract's schemas (which leave them to the
 * handler so that its 422 can name the valid values): per operation, the fields' documented schemas.
 */
const HANDLER_RULES: Readonly<Record<string, (properties: Json) => Json>> = {
  "webhooks.create": (properties) => ({ url: webhookUrl(properties.url), events: webhookEvents(properties.events) }),
  "webhooks.update": (properties) => ({ url: webhookUrl(properties.url), events: webhookEvents(properties.events) }),
  "subscriptions.create": (properties) => ({
    trigger: { ...properties.trigger, enum: listTriggers().map((trigger) => trigger.name) },
    pollIntervalSeconds: { ...properties.pollIntervalSeconds, minimum: 1, maximum: MAX_POLL_SECONDS },
    // "Distinct" (spec, subscriptions): a repeated id is 422.
    webhookEndpointIds: { ...properties.webhookEndpointIds, uniqueItems: true }
  })
}

/** Whether the endpoint takes a key: group middleware is applied to each of its endpoints. */
const isKeyed = (endpoint: HttpApiEndpoint.Top): boolean => endpoint.middlewares.has(Authentication)

const USER_HEADER = "x-service-user-id"
const USER_HEADER_PARAMETER: Json = {
  name: USER_HEADER,
  in: "header",
  required: false,
  description: "The user the request acts for, with an unpinned key; a pinned key naming another user is 403.",
  schema: { type: "string" }
}

const openApiPath = (path: string): string => path.replace(/:(\w+)/g, "{$1}")

/** The document: generated from `api`, then completed as the header says. */
export const makeDocument = (api: typeof Api): Json => {
  const spec: Json = OpenApi.fromApi(api)
  // The generated error schemas describe internal tagged errors; the wire has the envelope.
  for (const name of Object.keys(spec.components.schemas)) if (name.endsWith("Encoded")) delete spec.components.schemas[name]
  spec.components.schemas.ErrorEnvelope = jsonSchema(spec, ErrorEnvelope)
  spec.components.schemas.WebhookEnvelope = jsonSchema(spec, WebhookEnvelope)
  // Authentication is not an HttpApi security scheme (http/api/Middleware.ts): declared here.
  spec.components.securitySchemes = { bearer: { type: "http", scheme: "Bearer" } }

  for (const group of Object.values(api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const operation = spec.paths[openApiPath(endpoint.path)]?.[endpoint.method.toLowerCase()]
      if (operation === undefined) continue
      const keyed = isKeyed(endpoint)
      if (keyed) operation.security = [{ bearer: [] }]
      const successes = Object.entries(operation.responses as Json).filter(([status]) => Number(status) < 400)
      for (const [, response] of successes) response.headers = { ...REQUEST_ID_HEADER, ...(keyed ? RATE_LIMIT_HEADERS : {}) }
      operation.responses = Object.fromEntries([
        ...successes,
        ...errorStatuses(endpoint, keyed).map((status) => [String(status), errorResponse(status, keyed)])
      ])
      const limited = operation.responses["429"]
      if (limited !== undefined) limited.description = tooManyRequests(endpoint, operation.operationId)
      // The header counts on every route with a key (a pinned key naming another user is 403;
      // on the routes of one user's things it chooses whose), declared or read by a middleware.
      const parameters: Array<Json> = operation.parameters ?? []
      if (keyed && !parameters.some((parameter) => parameter.in === "header" && parameter.name === USER_HEADER)) {
        operation.parameters = [...parameters, { ...USER_HEADER_PARAMETER }]
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === "query" && parameter.name === "limit") {
          parameter.schema = { type: "integer", minimum: MIN_LIMIT, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }
        }
        // Checked by the handler (http/server/Users.ts), after the key, so that its 422 names the field.
        if ((parameter.in === "query" && parameter.name === "userId") || (parameter.in === "header" && parameter.name === "x-service-user-id")) {
          parameter.schema = { ...parameter.schema, pattern: CHOSEN_ID.source }
        }
      }
      const body = operation.requestBody?.content?.["application/json"]?.schema
      if (body !== undefined) Object.assign(body.properties ?? {}, HANDLER_RULES[operation.operationId]?.(body.properties))
      if (operation.operationId === "webhooks.update" && body !== undefined) body.minProperties = 1
      const examples = EXAMPLES[operation.operationId]
      if (examples?.request !== undefined) setExample(operation.requestBody?.content, examples.request)
      for (const [status, example] of Object.entries(examples?.responses ?? {})) setExample(operation.responses[status]?.content, example)
    }
  }

  const executeOperation = spec.paths["/v1/execute"]?.post
  const execute = executeOperation?.requestBody?.content?.["application/json"]
  if (execute !== undefined) execute.schema = { allOf: [execute.schema, toolInputs()] }
  const accepted = executeOperation?.responses?.["202"]
  if (accepted !== undefined) {
    accepted.headers.Location = { description: "`/v1/executions/{executionId}`, to read the record until it is terminal.", schema: { type: "string" } }
  }
  spec.paths["/v1/ingest/{subscriptionId}/{secret}"] = INGEST_PATH
  Object.assign(spec.paths, OPERATION_PATHS)
  spec.tags = [...(spec.tags ?? []), { name: "operations", description: "Probes and metrics for operators (decisions.md section 9): no key." }]

  spec.webhooks = {
    "execution.succeeded": webhookOperation("execution.succeeded", "An execution succeeded"),
    "execution.failed": webhookOperation("execution.failed", "An execution failed"),
    "execution.cancelled": webhookOperation("execution.cancelled", "An execution was cancelled"),
    ...Object.fromEntries(listTriggers().map((trigger) => [
      `trigger.${trigger.name}`,
      webhookOperation(`trigger.${trigger.name}`, `Trigger event ${trigger.name}`)
    ]))
  }
  return spec
}

let cached: Json | undefined
/** The service's document, built once. */
export const openApiDocument = (): Json => (cached ??= makeDocument(Api))
