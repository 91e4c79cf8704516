/**
 * The hand-written JSON Schemas are what MCP clients and docs see; the Effect codecs are what
 * the service enforces. These tests run the same samples through both and require the same
 * verdict, so the two cannot drift apart silently.
 */
import { assert, describe, it } from "@effect/vitest"
import Ajv2020 from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Effect, Exit, Schema } from "effect"
import { closedParseOptions, findTool, findTrigger, listTools, listTriggers } from "../../../domain/catalog/index.ts"
import type { JsonSchema } from "../../../domain/catalog/Catalog.ts"

const ajv = new Ajv2020.default({ strict: true, allErrors: false, strictRequired: false })
addFormats.default(ajv)

const agrees = (jsonSchema: JsonSchema, codec: Schema.Codec<unknown, unknown>, sample: unknown): boolean => {
  const json = ajv.validate(jsonSchema, sample)
  const effect = Exit.isSuccess(Effect.runSyncExit(Schema.decodeUnknownEffect(codec, closedParseOptions)(sample)))
  assert.strictEqual(json, effect, `JSON Schema says ${json}, codec says ${effect} for ${JSON.stringify(sample)}`)
  return json
}

const fileId = "file_0123456789abcdefghjkmnpqrstvwxyz"

const toolSamples: Readonly<Record<string, ReadonlyArray<readonly [unknown, boolean]>>> = {
  "demo.echo": [[{}, true], [{ a: { b: [1, null] } }, true], [[], false], ["x", false], [null, false]],
  "demo.sleep": [
    [{ ms: 0 }, true], [{ ms: 600_000 }, true], [{ ms: 600_001 }, false], [{ ms: -1 }, false],
    [{ ms: 1.5 }, false], [{ ms: "1" }, false], [{}, false], [{ ms: 1, x: 1 }, false]
  ],
  "demo.fail": [
    [{ code: "timeout" }, true], [{ code: "rate_limited", retryAfter: 3 }, true], [{ code: "rate_limited", retryAfter: -1 }, false],
    [{ code: "rate_limited", retryAfter: 1.5 }, false], [{ code: "not_found" }, false], [{}, false], [{ code: "timeout", x: 1 }, false]
  ],
  "demo.digest": [[{ fileId }, true], [{ fileId: "file_x" }, false], [{ fileId: `${fileId}0` }, false], [{}, false], [{ fileId, x: 1 }, false]],
  "http.request": [
    [{ method: "GET", url: "https://example.com/a?b=c" }, true],
    [{ method: "POST", url: "http://example.com", headers: { "content-type": "text/plain" }, body: "hi" }, true],
    [{ method: "HEAD", url: "HTTPS://EXAMPLE.COM" }, true],
    [{ method: "GET", url: "ftp://example.com" }, false],
    [{ method: "GET", url: "example.com" }, false],
    [{ method: "get", url: "https://example.com" }, false],
    [{ method: "GET", url: "https://example.com", headers: { a: 1 } }, false],
    [{ method: "GET", url: "https://example.com", body: 1 }, false],
    [{ method: "GET" }, false],
    [{ method: "GET", url: "https://example.com", follow: true }, false]
  ],
  "slack.post_message": [
    [{ channel: "C123", text: "hello" }, true], [{ channel: "", text: "hello" }, false], [{ channel: "C1", text: "" }, false],
    [{ channel: "C1" }, false], [{ channel: "C1", text: "x".repeat(40_001) }, false], [{ channel: "C1", text: "😀".repeat(40_000) }, true],
    [{ channel: "C1", text: "x", blocks: [] }, false]
  ],
  "github.create_issue": [
    [{ owner: "octo-org", repo: "hello.world", title: "Bug" }, true],
    [{ owner: "octo", repo: "r", title: "Bug", body: "details" }, true],
    [{ owner: "-octo", repo: "r", title: "t" }, false], [{ owner: "octo", repo: ".", title: "t" }, false],
    [{ owner: "octo", repo: "..", title: "t" }, false], [{ owner: "octo", repo: "...", title: "t" }, true],
    [{ owner: "octo", repo: "a/b", title: "t" }, false], [{ owner: "octo", repo: "r", title: "x".repeat(257) }, false],
    [{ owner: "octo", repo: "r" }, false], [{ owner: "octo", repo: "r", title: "t", assignees: [] }, false]
  ]
}

const filterSamples: Readonly<Record<string, ReadonlyArray<readonly [unknown, boolean]>>> = {
  "demo.event": [
    [{}, true], [{ type: "ping" }, true], [{ type: 1 }, false], [{ kind: "x" }, false],
    [{ type: "😀".repeat(255) }, true], [{ type: "t".repeat(256) }, false]
  ],
  "slack.message_posted": [
    [{}, true], [{ channel: "C1", user: "U1" }, true], [{ team: "T" }, false], [{ user: 1 }, false],
    [{ channel: "C".repeat(255), user: "U".repeat(255) }, true], [{ channel: "C".repeat(256) }, false], [{ user: "U".repeat(256) }, false]
  ],
  "github.issue_opened": [
    [{ owner: "o", repo: "r" }, true], [{ owner: "o", repo: "r", labels: ["bug", "p1"] }, true], [{ owner: "o" }, false],
    [{ owner: "o", repo: "r", labels: ["l".repeat(255)] }, true], [{ owner: "o", repo: "r", labels: ["l".repeat(256)] }, false],
    [{ owner: "o", repo: "r", labels: Array.from({ length: 100 }, (_, i) => `l${i}`) }, true],
    [{ owner: "o", repo: "r", labels: Array.from({ length: 101 }, (_, i) => `l${i}`) }, false],
    [{ owner: "o", repo: "r", labels: [""] }, false], [{ owner: "o", repo: "r", labels: "bug" }, false], [{ owner: "o", repo: "r", state: "open" }, false]
  ]
}

describe("JSON Schemas agree with the codecs", () => {
  it("covers every tool and trigger with samples", () => {
    assert.sameMembers(Object.keys(toolSamples), listTools().map((tool) => tool.name))
    assert.sameMembers(Object.keys(filterSamples), listTriggers().map((trigger) => trigger.name))
  })

  for (const [name, samples] of Object.entries(toolSamples)) {
    it(`${name} input`, () => {
      const tool = findTool(name)
      if (tool === undefined) return assert.fail(name)
      for (const [sample, expected] of samples) {
        assert.strictEqual(agrees(tool.inputSchema, tool.input, sample), expected, JSON.stringify(sample))
      }
    })
  }

  for (const [name, samples] of Object.entries(filterSamples)) {
    it(`${name} filters`, () => {
      const trigger = findTrigger(name)
      const schema = trigger?.annotations["filtersSchema"]
      if (trigger === undefined || typeof schema !== "object" || schema === null) return assert.fail(name)
      for (const [sample, expected] of samples) {
        assert.strictEqual(agrees(schema as JsonSchema, trigger.filters, sample), expected, JSON.stringify(sample))
      }
    })
  }

  it("compiles every output and payload schema", () => {
    for (const tool of listTools()) ajv.compile(tool.outputSchema)
    for (const trigger of listTriggers()) ajv.compile(trigger.payloadSchema)
  })
})
