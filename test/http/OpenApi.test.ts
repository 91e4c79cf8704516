/**
 * `/openapi.json` and `/docs` (http/api/OpenApiDocument.ts, http/server/Docs.ts): the document
 * is valid OpenAPI 3.1, documents every route with the envelope on every error status, its
 * examples match its own schemas, real error answers carry statuses it declares, and the docs
 * page renders in Chromium with no request to another host, served compressed.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { Ajv2020 } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Schema } from "effect"
import { brotliDecompressSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { ExecuteRequest } from "../../http/api/ExecutionsApi.ts"
import { EXAMPLES, WEBHOOK_ENVELOPE_EXAMPLE, WebhookEnvelope } from "../../http/api/OpenApiDocument.ts"
import { CreatedWebhookEndpoint, CreateWebhookRequest } from "../../http/api/WebhooksApi.ts"
import { routes } from "../../http/server/Server.ts"
import { type Browser, launch } from "../dashboard/Browser.ts"
import { type InProcessService, OTHER_KEY, PINNED_KEY, startService } from "../support/Service.ts"

// oxlint-disable-next-line typescript/no-explicit-any -- the document is walked and edited as plain JSON
type Json = Record<string, any>

let service: InProcessService
let document: Json

const RATE_BURST = 60

beforeAll(async () => {
  service = await startService({ SERVICE_RATE_LIMIT_REQUEST_BURST: String(RATE_BURST) })
  const response = await service.fetch("/openapi.json", { key: null })
  expect(response.status).toBe(200)
  document = await response.json() as Json
})
afterAll(() => service.close())

const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}")

/** The operation a request path and method are answered by, where the document has one. */
const operationFor = (method: string, path: string): Json | undefined => {
  for (const [template, item] of Object.entries<Json>(document.paths)) {
    const pattern = new RegExp("^" + template.replace(/\{\w+\}/g, "[^/]+") + "$")
    if (pattern.test(path)) return item[method.toLowerCase()]
  }
  return undefined
}

/** A validator for schemas of this document ($refs into its components resolve). */
const ajv = () => {
  const instance = new Ajv2020({ strict: false, allErrors: true })
  instance.addSchema({ $id: "doc", components: document.components })
  return instance
}
const asSchema = (schema: Json): Json =>
  JSON.parse(JSON.stringify(schema).replaceAll("\"#/components/", "\"doc#/components/")) as Json

describe("the OpenAPI document", () => {
  it("is valid OpenAPI 3.1", async () => {
    expect(document.openapi).toBe("3.1.0")
    const result = await new Validator().validate(structuredClone(document))
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
  })

  it("documents every API route with a summary, a description and the envelope on each error status", () => {
    const apiRoutes = routes.filter((route) => route.path.startsWith("/v1/") || route.path === "/health")
    expect(apiRoutes.length).toBeGreaterThan(20)
    for (const route of apiRoutes) {
      const operation = document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()] as Json | undefined
      expect(operation, `${route.method} ${route.path}`).toBeDefined()
      expect(operation?.summary ?? "", `${route.method} ${route.path}`).toMatch(/\w/)
      expect(operation?.description ?? "", `${route.method} ${route.path}`).toMatch(/\w/)
      const statuses = Object.keys(operation?.responses ?? {}).map(Number)
      // Node's own refusals (a slow or oversized request) reach every route.
      expect(statuses, `${route.method} ${route.path}`).toEqual(expect.arrayContaining([405, 408, 431, 500]))
      for (const status of statuses.filter((s) => s >= 400)) {
        expect(operation?.responses[status].content["application/json"].schema, `${route.path} ${status}`)
          .toEqual({ $ref: "#/components/schemas/ErrorEnvelope" })
      }
    }
    // No internal tagged error is left for a generated client to expect.
    expect(Object.keys(document.components.schemas).filter((name) => name.endsWith("Encoded"))).toEqual([])
  })

  it("types every number a record carries as a JSON number (a generated client must not see strings such as \"Infinity\")", () => {
    const text = JSON.stringify({ paths: document.paths, components: document.components })
    expect(text).not.toContain("\"Infinity\"")
    expect(text).not.toContain("\"NaN\"")
  })

  it("says which statuses keyed routes and body routes answer", () => {
    const execute = document.paths["/v1/execute"].post
    expect(Object.keys(execute.responses)).toEqual(
      expect.arrayContaining(["200", "202", "400", "401", "403", "405", "413", "415", "422", "429", "500"])
    )
    expect(Object.keys(document.paths["/v1/executions/{executionId}/cancel"].post.responses)).toContain("409")
    expect(Object.keys(document.paths["/health"].get.responses)).not.toContain("401")
    expect(execute.responses["429"].headers["Retry-After"]).toBeDefined()
    // Every answer behind the key carries its bucket's headers, refusals included (docs/api.md);
    // the key's own 401 took no token.
    for (const status of ["403", "404", "413", "422", "429"]) {
      const responses = (status === "404" ? document.paths["/v1/executions/{executionId}"].get : execute).responses
      expect(Object.keys(responses[status].headers), status).toEqual(expect.arrayContaining(["Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]))
    }
    expect(Object.keys(execute.responses["401"].headers)).not.toContain("RateLimit-Limit")
    // Ingest (no key): every answer has its Request-Id, the framing refusals too.
    const ingestAnswers = document.paths["/v1/ingest/{subscriptionId}/{secret}"].post.responses
    for (const status of ["200", "202", "400", "404", "505"]) expect(Object.keys(ingestAnswers[status].headers), status).toContain("Request-Id")
    // A keyed route reads its key, and most their data, from the store: 503 while it is away.
    expect(execute.responses["503"].headers["Retry-After"]).toBeDefined()
    expect(execute.responses["503"].description).toContain("provider_unavailable")
    expect(Object.keys(document.paths["/health"].get.responses)).not.toContain("503")
    const ingest = document.paths["/v1/ingest/{subscriptionId}/{secret}"].post
    expect(Object.keys(ingest.responses)).toEqual(expect.arrayContaining(["408", "431", "503"]))
    // Every tag an operation names is declared.
    const declared = new Set((document.tags as ReadonlyArray<Json>).map((tag) => tag.name))
    for (const methods of Object.values(document.paths as Record<string, Record<string, Json>>)) {
      for (const operation of Object.values(methods)) for (const tag of operation.tags ?? []) expect(declared, tag).toContain(tag)
    }
    const subscriptionBody = document.paths["/v1/subscriptions"].post.requestBody.content["application/json"].schema
    expect(subscriptionBody.properties.webhookEndpointIds.uniqueItems).toBe(true)
    // The probes pass the same edge (outside audit: they declared 200 and 405 only, while a
    // request without Host is 400, a slow one 408, oversized headers 431, HTTP/2.0 505).
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const answers = document.paths[path].get.responses
      expect(Object.keys(answers), path).toEqual(expect.arrayContaining(["200", "400", "405", "408", "431", "500", "505"]))
      for (const status of ["400", "408", "431", "505"]) {
        expect(answers[status].content["application/json"].schema, `${path} ${status}`).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" })
      }
    }
    expect(document.paths["/v1/executions"].get.parameters.find((p: Json) => p.name === "limit").schema)
      .toEqual({ type: "integer", minimum: 1, maximum: 100, default: 100 })
  })

  // Outside audit: X-Service-User-Id was declared on the create and list routes only, though it
  // changes the answer of every keyed route (403 for a pinned key naming another user; whose
  // connection or subscription a get, rotate or delete sees).
  it("declares X-Service-User-Id, with its pattern, on every keyed operation and on no other", () => {
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Json>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const header = (operation.parameters ?? []).filter((p: Json) => p.in === "header" && p.name === "x-service-user-id")
        const keyed = (operation.security ?? []).length > 0
        expect(header, `${method} ${path}`).toHaveLength(keyed ? 1 : 0)
        if (keyed) expect(header[0].schema.pattern, `${method} ${path}`).toBe("^[A-Za-z0-9_.-]{1,64}$")
      }
    }
  })

  // Outside audit: docs/api.md says the document describes every route; the probes were missing.
  it("describes the operator's routes, and their real answers match it", async () => {
    for (const path of ["/healthz", "/readyz", "/metrics"]) {
      const operation = document.paths[path]?.get
      expect(operation, path).toBeDefined()
      expect(operation.security).toEqual([])
      const response = await service.fetch(path, { key: null })
      const declared = operation.responses[String(response.status)]
      expect(declared, `${path} ${response.status}`).toBeDefined()
      // Every answer carries Request-Id (decisions.md section 2); the document says so here too.
      expect(response.headers.get("request-id")).toMatch(/^req_/)
      expect(declared.headers?.["Request-Id"], `${path}: Request-Id declared`).toBeDefined()
      const type = (response.headers.get("content-type") ?? "").split(";")[0]!
      const schema = declared.content[type]?.schema
      expect(schema, `${path} ${type}`).toBeDefined()
      const body = type === "application/json" ? await response.json() : await response.text()
      const validate = ajv().compile(schema)
      expect(validate(body), `${path}: ${JSON.stringify(validate.errors)}`).toBe(true)
    }
  })

  it("gives the execute body the input schema of each catalog tool", () => {
    const schema = document.paths["/v1/execute"].post.requestBody.content["application/json"].schema
    const validate = ajv().compile(asSchema(schema))
    expect(validate({ tool: "demo.echo", input: { message: "hi" } })).toBe(true)
    expect(validate({ tool: "demo.sleep", input: { ms: "long" } })).toBe(false)
    expect(validate({ tool: "demo.echo", input: {}, surplus: 1 })).toBe(false)
    // The wire name (`demo__echo`, as MCP names tools) is accepted by the service, so by the schema.
    expect(validate({ tool: "demo__echo", input: { message: "hi" } })).toBe(true)
    expect(validate({ tool: "demo__sleep", input: { ms: "long" } })).toBe(false)
    expect(validate({ tool: "demo__nope", input: {} })).toBe(false)
  })

  it("has examples that match both its own schemas and the contract's", () => {
    const validator = ajv()
    let checked = 0
    for (const [operationId, examples] of Object.entries(EXAMPLES)) {
      const [path, method] = Object.entries<Json>(document.paths).flatMap(([p, item]) =>
        Object.entries<Json>(item).filter(([, op]) => op.operationId === operationId).map(([m]) => [p, m] as const)
      )[0] ?? []
      expect(path, operationId).toBeDefined()
      const operation = document.paths[path as string][method as string]
      if (examples.request !== undefined) {
        const media = operation.requestBody.content["application/json"]
        expect(media.example).toEqual(examples.request)
        expect(validator.validate(asSchema(media.schema), media.example), `${operationId} request`).toBe(true)
        checked++
      }
      for (const status of Object.keys(examples.responses ?? {})) {
        const media = operation.responses[status].content["application/json"]
        expect(validator.validate(asSchema(media.schema), media.example), `${operationId} ${status}`).toBe(true)
        checked++
      }
    }
    expect(checked).toBe(6)
    // The same examples decode with the contract's schemas.
    Schema.decodeUnknownSync(ExecuteRequest)(EXAMPLES["executions.execute"]?.request)
    Schema.decodeUnknownSync(ExecutionRecord)(EXAMPLES["executions.execute"]?.responses?.[200])
    Schema.decodeUnknownSync(CreateWebhookRequest)(EXAMPLES["webhooks.create"]?.request)
    Schema.decodeUnknownSync(CreatedWebhookEndpoint)(EXAMPLES["webhooks.create"]?.responses?.[201])
    Schema.decodeUnknownSync(WebhookEnvelope)(WEBHOOK_ENVELOPE_EXAMPLE)
  })

  describe("is as strict as the service: what the service refuses with 422, the document rules out", () => {
    let endpointId = ""
    beforeAll(async () => {
      const created = await service.fetch("/v1/webhooks", { method: "POST", json: { url: "https://example.com/h", events: ["execution.completed"] } })
      endpointId = ((await created.json()) as { endpointId: string }).endpointId
    })
    const execute = { tool: "demo.echo", input: {} }
    const hook = { url: "https://example.com/h", events: ["execution.completed"] }
    const cases: ReadonlyArray<{
      readonly name: string
      readonly method: string
      readonly path: string
      readonly body?: Json
      readonly query?: Readonly<Record<string, string>>
      readonly header?: Readonly<Record<string, string>>
    }> = [
      { name: "execute: a userId outside [A-Za-z0-9_.-]{1,64}", method: "POST", path: "/v1/execute", body: { ...execute, userId: "a b" } },
      { name: "connections: a userId with a slash", method: "POST", path: "/v1/connections", body: { userId: "a/b", toolkit: "github", authClass: "bearer", credentials: { token: "t" } } },
      { name: "subscriptions: a userId of 65 characters", method: "POST", path: "/v1/subscriptions", body: { trigger: "demo.event", userId: "u".repeat(65), webhookEndpointIds: ["whe_x"] } },
      { name: "subscriptions: a trigger the catalog lacks", method: "POST", path: "/v1/subscriptions", body: { trigger: "demo.nope", userId: "u", webhookEndpointIds: ["whe_x"] } },
      { name: "subscriptions: a poll interval past a day", method: "POST", path: "/v1/subscriptions", body: { trigger: "github.issue_opened", userId: "u", webhookEndpointIds: ["whe_x"], pollIntervalSeconds: 86_401 } },
      { name: "executions list: a userId with a space", method: "GET", path: "/v1/executions", query: { userId: "a b" } },
      { name: "connections list: a userId with a space", method: "GET", path: "/v1/connections", query: { userId: "a b" } },
      { name: "subscriptions list: a userId with a space", method: "GET", path: "/v1/subscriptions", query: { userId: "a b" } },
      { name: "X-Service-User-Id with a space", method: "GET", path: "/v1/executions", header: { "x-service-user-id": "a b" } },
      { name: "webhooks: no events", method: "POST", path: "/v1/webhooks", body: { ...hook, events: [] } },
      { name: "webhooks: an unknown event type", method: "POST", path: "/v1/webhooks", body: { ...hook, events: ["execution.done"] } },
      { name: "webhooks: a repeated event type", method: "POST", path: "/v1/webhooks", body: { ...hook, events: ["execution.failed", "execution.failed"] } },
      { name: "webhooks: a url that is not a URL", method: "POST", path: "/v1/webhooks", body: { ...hook, url: "not a url" } },
      { name: "webhooks: an http url (receivers are HTTPS only)", method: "POST", path: "/v1/webhooks", body: { ...hook, url: "http://example.com/h" } },
      { name: "webhooks update: an http url", method: "PATCH", path: "/v1/webhooks/{endpointId}", body: { url: "http://example.com/h" } },
      { name: "webhooks update: nothing to change", method: "PATCH", path: "/v1/webhooks/{endpointId}", body: {} },
      { name: "webhooks update: no events", method: "PATCH", path: "/v1/webhooks/{endpointId}", body: { events: [] } },
      { name: "recover: a since that is not a time", method: "POST", path: "/v1/webhooks/{endpointId}/recover", body: { since: "yesterday" } },
      { name: "files: a name with a control character", method: "POST", path: "/v1/files", body: { name: "a\u0001b", content: "aGk=" } }
    ]
    it.each(cases)("$name", async ({ method, path, body, query, header }) => {
      const operation = document.paths[path][method.toLowerCase()]
      const validator = ajv()
      addFormats.default(validator)
      const problems: Array<string> = []
      if (body !== undefined && validator.validate(asSchema(operation.requestBody.content["application/json"].schema), body)) {
        problems.push("the document's body schema takes it")
      }
      for (const [location, values] of [["query", query], ["header", header]] as const) {
        for (const [name, value] of Object.entries(values ?? {})) {
          const parameter = (operation.parameters as Array<Json>).find((p) => p.in === location && p.name === name)
          if (parameter === undefined || validator.validate(asSchema(parameter.schema), value)) problems.push(`the document's ${location} ${name} takes it`)
        }
      }
      expect(problems).toEqual([])
      const search = query === undefined ? "" : `?${new URLSearchParams(query).toString()}`
      const response = await service.fetch(`${path.replace("{endpointId}", endpointId)}${search}`, {
        method,
        ...(body === undefined ? {} : { json: body }),
        ...(header === undefined ? {} : { headers: header })
      })
      expect(response.status).toBe(422)
    })
  })

  it("is not stricter than the service: webhook URLs the service takes, the document takes", async () => {
    const operation = document.paths["/v1/webhooks"].post
    const validator = ajv()
    addFormats.default(validator)
    const schema = asSchema(operation.requestBody.content["application/json"].schema)
    for (const url of ["https://bücher.example/hook", "https://8.8.8.8/a b", "https://8.8.8.8/x|y{z}^", " https://8.8.8.8/hook ", "HTTPS://8.8.8.8:443/Hook#frag ment"]) {
      const body = { url, events: ["execution.completed"] }
      const created = await service.fetch("/v1/webhooks", { method: "POST", json: body })
      expect(created.status, url).toBe(201)
      expect(validator.validate(schema, body), `${url}: ${JSON.stringify(validator.errors)}`).toBe(true)
    }
  })

  it("gives each webhook type an example of what it really carries", () => {
    const example = (type: string) => document.webhooks[type].post.requestBody.content["application/json"].example as {
      id: string
      type: string
      data: Record<string, unknown>
    }
    for (const [type, status] of [["execution.succeeded", "succeeded"], ["execution.failed", "failed"], ["execution.cancelled", "cancelled"]] as const) {
      const envelope = example(type)
      expect(envelope.type).toBe(type)
      const record = Schema.decodeUnknownSync(ExecutionRecord)(envelope.data)
      expect(record.status, type).toBe(status)
    }
    expect(example("execution.cancelled").data).toMatchObject({ error: { code: "execution_cancelled" }, cancellation: { dispatchMayHaveBegun: expect.any(Boolean) } })
    for (const type of Object.keys(document.webhooks).filter((t) => t.startsWith("trigger."))) {
      const envelope = example(type)
      expect(envelope.id).toMatch(/^evt_trigger_/)
      expect(Object.keys(envelope.data).toSorted()).toEqual(["connectionId", "eventId", "occurredAt", "payload", "subscriptionId", "trigger", "userId"])
      expect(envelope.data.trigger).toBe(type.slice("trigger.".length))
      expect(envelope.data.eventId).toBe(envelope.id)
    }
    // Ingest answers a body that is not JSON with 422 (decisions.md section 5), never 400: its
    // 400 is for framing alone (several Host headers).
    const ingest400 = document.paths["/v1/ingest/{subscriptionId}/{secret}"].post.responses["400"]
    expect(ingest400.description).toContain("not JSON is 422")
  })

  it("says what recover queues: the failed events since `since`, once each, less those a later delivery brought or is bringing", () => {
    const recover = document.paths["/v1/webhooks/{endpointId}/recover"].post
    const text = `${recover.summary} ${recover.description} ${recover.responses["202"].description}`
    // Not every failed delivery: an event the endpoint has had since (a resend, an earlier
    // recover) or is still being sent is left out, so a second recover counts 0 (docs/webhooks.md).
    expect(text).not.toMatch(/every delivery of the endpoint that failed/i)
    expect(text).toMatch(/once each/i)
    expect(text).toMatch(/succeeded|has had since/i)
    expect(text).toMatch(/still being sent|still bringing|open/i)
    expect(text).toMatch(/second recover[^.]*counts 0/i)
  })

  it("names every cause of a 429 and of a 415 the service has, where each can happen", () => {
    const tooMany = (path: string, method: string) => document.paths[path][method].responses["429"].description as string
    // POST /v1/execute: the execute bucket (not the standard one), the daily quota, a full concurrency cap.
    const execute = tooMany("/v1/execute", "post")
    expect(execute).toMatch(/execute bucket/i)
    expect(execute).not.toMatch(/standard bucket/i)
    expect(execute).toMatch(/daily execution quota/i)
    expect(execute).toMatch(/SERVICE_RATE_LIMIT_DAILY_EXECUTIONS/)
    expect(execute).toMatch(/concurren/i)
    // Every other keyed route: the standard bucket; staging a file also the project's file storage.
    for (const [path, method] of [["/v1/me", "get"], ["/v1/executions", "get"], ["/v1/webhooks", "post"], ["/v1/files", "post"]] as const) {
      expect(tooMany(path, method), `${method} ${path}`).toMatch(/standard bucket/i)
      expect(tooMany(path, method), `${method} ${path}`).not.toMatch(/execute bucket|daily execution quota|concurren/i)
    }
    expect(tooMany("/v1/files", "post")).toMatch(/SERVICE_FILE_PROJECT_MAX_BYTES/)
    expect(tooMany("/v1/me", "get")).not.toMatch(/SERVICE_FILE_PROJECT_MAX_BYTES/)
    // 415: a Content-Type other than application/json, a charset other than UTF-8, a content coding.
    for (const [path, method] of [["/v1/execute", "post"], ["/v1/me", "get"]] as const) {
      const unsupported = document.paths[path][method].responses["415"].description as string
      expect(unsupported, path).toMatch(/application\/json/)
      expect(unsupported, path).toMatch(/charset/i)
      expect(unsupported, path).toMatch(/Content-Encoding/)
    }
  })

  it("documents deliveries as webhooks: the envelope and the signature headers", () => {
    const types = Object.keys(document.webhooks)
    expect(types).toEqual(expect.arrayContaining(["execution.succeeded", "execution.failed", "execution.cancelled", "trigger.github.issue_opened"]))
    const delivery = document.webhooks["execution.succeeded"].post
    expect(delivery.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/WebhookEnvelope" })
    expect(delivery.parameters.map((p: Json) => p.name)).toEqual(expect.arrayContaining([
      "Service-Webhook-Id",
      "Service-Webhook-Timestamp",
      "Service-Webhook-Signature",
      "Service-Timestamp",
      "Service-Signature"
    ]))
    expect(document.components.schemas.WebhookEnvelope.required).toEqual(["id", "type", "createdAt", "projectId", "data"])
  })
})

describe("real error answers", () => {
  const json = { "content-type": "application/json" }
  interface Sample {
    readonly label: string
    readonly path: string
    readonly init?: Parameters<InProcessService["fetch"]>[1]
    readonly status: number
  }
  /** Each request and the status it gets; every one must be declared for its operation. */
  const samples: ReadonlyArray<Sample> = [
    { label: "no key", path: "/v1/me", init: { key: null }, status: 401 },
    { label: "unknown key", path: "/v1/executions", init: { key: "not_a_key_000000000000" }, status: 401 },
    { label: "pinned key on a project-wide route", path: "/v1/webhooks", init: { key: PINNED_KEY }, status: 403 },
    { label: "pinned key naming another user", path: "/v1/executions", init: { key: PINNED_KEY, headers: { "x-service-user-id": "user_2" } }, status: 403 },
    { label: "unknown execution", path: "/v1/executions/exe_missing", status: 404 },
    { label: "unknown tool", path: "/v1/execute", init: { method: "POST", json: { tool: "demo.nothing", input: {}, userId: "user_1" } }, status: 422 },
    {
      label: "unknown attachment",
      path: "/v1/execute",
      init: { method: "POST", json: { tool: "demo.echo", input: {}, userId: "user_1", attachments: ["file_missing"] } },
      status: 422
    },
    { label: "method not served", path: "/v1/me", init: { method: "DELETE" }, status: 405 },
    { label: "malformed JSON", path: "/v1/webhooks", init: { method: "POST", headers: json, body: "{" }, status: 400 },
    { label: "body too large", path: "/v1/execute", init: { method: "POST", headers: json, body: " ".repeat(1024 * 1024 + 1) }, status: 413 },
    { label: "not JSON", path: "/v1/execute", init: { method: "POST", headers: { "content-type": "text/plain" }, body: "x" }, status: 415 },
    { label: "schema failure", path: "/v1/execute", init: { method: "POST", json: { tool: 1 } }, status: 422 },
    { label: "bad limit", path: "/v1/executions?limit=0", status: 422 },
    { label: "bad cursor", path: "/v1/files?cursor=%25%25%25", status: 422 },
    { label: "malformed user header", path: "/v1/me", init: { headers: { "x-service-user-id": "a b" } }, status: 422 },
    { label: "wrong ingest secret", path: "/v1/ingest/trgsub_missing/secret", init: { method: "POST", key: null, json: {} }, status: 404 }
  ]

  /** The status is declared for the operation the request reached, or on its path (405). */
  const checkDeclared = async (label: string, method: string, path: string, response: Response) => {
    const operation = operationFor(response.status === 405 ? "GET" : method, path)
    expect(operation, `${label}: ${method} ${path}`).toBeDefined()
    expect(Object.keys(operation?.responses ?? {}), `${label}: ${response.status}`).toContain(String(response.status))
    const body = await response.json()
    const envelope = ajv().compile(asSchema(document.components.schemas.ErrorEnvelope))
    expect(envelope(body), `${label}: ${JSON.stringify(body)}`).toBe(true)
  }

  it.each(samples)("$label: $status, declared, with the envelope", async ({ label, path, init, status }) => {
    const response = await service.fetch(path, init)
    expect(response.status, label).toBe(status)
    await checkDeclared(label, init?.method ?? "GET", path.split("?", 1)[0] ?? path, response)
  })

  it("a cancel of a finished execution: 409, declared", async () => {
    const done = await (await service.fetch("/v1/execute", { method: "POST", json: { tool: "demo.echo", input: {}, userId: "user_1" } })).json() as Json
    expect(done.status).toBe("succeeded")
    const response = await service.fetch(`/v1/executions/${done.executionId}/cancel`, { method: "POST" })
    expect(response.status).toBe(409)
    await checkDeclared("cancel", "POST", `/v1/executions/${done.executionId}/cancel`, response)
  })

  it("the project rate limit: 429, declared with Retry-After", async () => {
    let limited: Response | undefined
    for (let i = 0; i < RATE_BURST + 10 && limited === undefined; i++) {
      const response = await service.fetch("/v1/me", { key: OTHER_KEY })
      if (response.status === 429) limited = response
      else await response.arrayBuffer()
    }
    expect(limited?.status).toBe(429)
    expect(document.paths["/v1/me"].get.responses["429"].headers["Retry-After"]).toBeDefined()
    await checkDeclared("rate limit", "GET", "/v1/me", limited as Response)
  })
})

describe("real execute answers", () => {
  const schemaOf = (status: number) =>
    ajv().compile(asSchema(document.paths["/v1/execute"].post.responses[String(status)].content["application/json"].schema))
  const base = { ...EXAMPLES["executions.execute"]?.responses?.[202] as Json }

  it("the 200 takes only a terminal record (spec: succeeded, failed, cancelled); a pending or running one is a 202", () => {
    const ok = schemaOf(200)
    for (const status of ["pending", "running"]) expect(ok({ ...base, status }), status).toBe(false)
    expect(ok(EXAMPLES["executions.execute"]?.responses?.[200])).toBe(true)
    const accepted = schemaOf(202)
    for (const status of ["pending", "running"]) expect(accepted({ ...base, status }), status).toBe(true)
  })

  /** Sends an execute and checks its answer against the document's schema for its status. */
  const conforms = async (body: Json, status: number): Promise<Json> => {
    const response = await service.fetch("/v1/execute", { method: "POST", json: { userId: "user_1", input: {}, ...body } })
    expect(response.status, JSON.stringify(body)).toBe(status)
    const record = await response.json() as Json
    const validate = schemaOf(status)
    expect(validate(record), `${JSON.stringify(record)}: ${JSON.stringify(validate.errors)}`).toBe(true)
    return record
  }

  it("match the document's schema of their status: 200 succeeded, failed, cancelled; 202 pending, and a finished replay", async () => {
    expect((await conforms({ tool: "demo.echo", input: { a: 1 } }, 200)).status).toBe("succeeded")
    expect((await conforms({ tool: "demo.fail", input: { code: "provider_error" } }, 200)).status).toBe("failed")
    const pending = await conforms({ tool: "demo.sleep", input: { ms: 60_000 }, mode: "async" }, 202)
    expect(["pending", "running"]).toContain(pending.status)
    await (await service.fetch(`/v1/executions/${pending.executionId}/cancel`, { method: "POST" })).arrayBuffer()
    // A sync request of a tool that runs async by nature waits for it: cancelled meanwhile, a 200.
    const waiting = conforms({ tool: "demo.sleep", input: { ms: 60_000 }, idempotencyKey: "openapi-sync-cancel" }, 200)
    let running: Json | undefined
    for (let i = 0; i < 20 && running === undefined; i++) {
      const page = await (await service.fetch("/v1/executions?tool=demo.sleep&userId=user_1")).json() as { executions: Array<Json> }
      // Recorded in async mode (the tool's nature): found as the other open one.
      running = page.executions.find((e) => e.executionId !== pending.executionId && (e.status === "pending" || e.status === "running"))
      if (running === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(running).toBeDefined()
    await (await service.fetch(`/v1/executions/${running?.executionId}/cancel`, { method: "POST" })).arrayBuffer()
    expect((await waiting).status).toBe("cancelled")
    // An async replay of a finished execution answers 202 with its terminal record.
    const first = await conforms({ tool: "demo.echo", idempotencyKey: "openapi-replay" }, 200)
    const replay = await conforms({ tool: "demo.echo", idempotencyKey: "openapi-replay", mode: "async" }, 202)
    expect(replay).toMatchObject({ executionId: first.executionId, status: "succeeded", replayed: true })
  })
})

describe("serving the document and the docs page", () => {
  it("/openapi.json is compressed by Accept-Encoding, with an ETag that answers 304", async () => {
    const plain = await fetch(`${service.baseUrl}/openapi.json`, { headers: { "accept-encoding": "identity" } })
    const text = await plain.text()
    expect(plain.headers.get("content-encoding")).toBeNull()
    const etag = plain.headers.get("etag")
    expect(etag).toMatch(/^".+"$/)
    const again = await fetch(`${service.baseUrl}/openapi.json`, { headers: { "if-none-match": etag ?? "" } })
    expect(again.status).toBe(304)
    // fetch() would decode brotli itself; node:http shows the bytes as sent.
    const { request } = await import("node:http")
    const raw = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      request(`${service.baseUrl}/openapi.json`, { headers: { "accept-encoding": "br" } }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c)).on("end", () => resolve({ encoding: res.headers["content-encoding"], body: Buffer.concat(chunks) }))
      }).on("error", reject).end()
    })
    expect(raw.encoding).toBe("br")
    expect(brotliDecompressSync(raw.body).toString()).toBe(text)
    expect(raw.body.length).toBeLessThan(text.length / 4)
  })

  it("/docs links an icon that needs no request, which its Content-Security-Policy allows (no /favicon.ico 404)", async () => {
    const response = await fetch(`${service.baseUrl}/docs`)
    const html = await response.text()
    const icon = /<link rel="icon" href="([^"]*)" \/>/.exec(html)
    expect(icon?.[1]).toBe("data:,")
    expect(html.indexOf("<link rel=\"icon\"")).toBeLessThan(html.indexOf("</head>"))
    const imageSources = (response.headers.get("content-security-policy") ?? "").split(";").map((d) => d.trim())
      .find((directive) => directive.startsWith("img-src "))
    expect(imageSources?.split(" ")).toContain("data:")
  })

  it("/docs is compressed, and answers 405 to other methods", async () => {
    const head = await fetch(`${service.baseUrl}/docs`, { method: "HEAD", headers: { "accept-encoding": "br, gzip" } })
    expect(head.status).toBe(200)
    expect(head.headers.get("content-encoding")).toBe("br")
    expect(Number(head.headers.get("content-length"))).toBeLessThan(1_000_000)
    expect(head.headers.get("content-security-policy")).toContain("default-src 'none'")
    const post = await fetch(`${service.baseUrl}/docs`, { method: "POST" })
    expect(post.status).toBe(405)
    expect(post.headers.get("allow")).toContain("GET")
  })

  describe("in Chromium", () => {
    let browser: Browser
    beforeAll(async () => {
      browser = await launch()
    }, 60_000)
    afterAll(() => browser?.close())

    it("/docs renders the API with no request to another host", async () => {
      const page = await browser.context.newPage()
      const requests: Array<string> = []
      const errors: Array<string> = []
      page.on("request", (request) => requests.push(request.url()))
      page.on("pageerror", (error) => errors.push(error.message))
      const failed: Array<string> = []
      page.on("response", (response) => {
        if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`)
      })
      await page.goto(`${service.baseUrl}/docs`, { waitUntil: "networkidle" })
      // The first group is open: its operation's summary shows; the others open on a click.
      await page.getByText("Who am I").first().waitFor({ timeout: 20_000 })
      await page.getByText("executions", { exact: true }).first().click()
      await page.getByText("Execute a tool").first().waitFor({ timeout: 20_000 })
      await page.waitForLoadState("networkidle")
      const origin = new URL(service.baseUrl).origin
      const elsewhere = requests.filter((url) => !url.startsWith(origin) && !url.startsWith("data:") && !url.startsWith("blob:"))
      expect(elsewhere).toEqual([])
      // The page's icon is inline: the browser asks for no /favicon.ico (a 404 in its console).
      expect(requests.filter((url) => url.includes("favicon"))).toEqual([])
      expect(failed).toEqual([])
      expect(errors).toEqual([])
      await page.close()
    }, 60_000)
  })
})
