import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  catalogFingerprint,
  catalogVersion,
  decodeToolInput,
  decodeTriggerFilters,
  findTool,
  findToolkit,
  findTrigger,
  listTools,
  listTriggers,
  toolkits,
  toWireName
} from "../../../domain/catalog/index.ts"

/** The versions of every tool and trigger at the first release. */
const FIRST_RELEASE: ReadonlyArray<string> = [
  "demo.digest@1.0.0",
  "demo.echo@1.0.0",
  "demo.event@1.0.0",
  "demo.fail@1.0.0",
  "demo.sleep@1.0.0",
  "github.create_issue@1.0.0",
  "github.issue_opened@1.0.0",
  "http.request@1.0.0",
  "slack.message_posted@1.0.0",
  "slack.post_message@1.0.0"
]

/** A release: the previous one with some entries replaced by their new versions. */
const after = (previous: ReadonlyArray<string>, changed: Readonly<Record<string, string>>) =>
  previous.map((entry) => changed[entry] ?? entry)

// http.request 1.1.0: an upstream 5xx and 429 fail (provider_unavailable, rate_limited), and a
// long body is cut to fit the output cap.
const RELEASE_2026_11_28 = after(FIRST_RELEASE, { "http.request@1.0.0": "http.request@1.1.0" })

/**
 * Every catalogVersion with the fingerprint it was released with. Changing a tool or trigger
 * version changes the fingerprint: add a new catalogVersion line here and in the catalog.
 */
const RELEASED: Readonly<Record<string, string>> = {
  "2026-11-22.1": FIRST_RELEASE.join(","),
  "2026-11-28.1": RELEASE_2026_11_28.join(",")
}

const names = <A extends { readonly name: string }>(items: ReadonlyArray<A>) => items.map((item) => item.name)

const decodeError = (tool: string, input: unknown) =>
  Effect.gen(function*() {
    const definition = findTool(tool)
    assert.isDefined(definition)
    if (definition === undefined) return ""
    const error = yield* Effect.flip(decodeToolInput(definition, input))
    assert.strictEqual(error.code, "invalid_input")
    return error.message
  })

const decodes = (tool: string, input: unknown) =>
  Effect.gen(function*() {
    const definition = findTool(tool)
    if (definition === undefined) return assert.fail(`unknown tool ${tool}`)
    return yield* decodeToolInput(definition, input)
  })

describe("catalog", () => {
  it("pins catalogVersion to the versions of every tool and trigger", () => {
    assert.strictEqual(RELEASED[catalogVersion], catalogFingerprint())
    assert.match(catalogVersion, /^\d{4}-\d{2}-\d{2}\.\d+$/)
  })

  it("lists the four toolkits with their manifests", () => {
    assert.deepStrictEqual(names(toolkits), ["demo", "http", "slack", "github"])
    assert.strictEqual(findToolkit("demo")?.limits.maxConcurrentExecutionsPerProject, 4)
    assert.deepStrictEqual(findToolkit("demo")?.authClasses, ["none"])
    assert.deepStrictEqual(findToolkit("http")?.authClasses, ["none"])
    assert.deepStrictEqual(findToolkit("slack")?.authClasses, ["bearer"])
    assert.deepStrictEqual(findToolkit("github")?.authClasses, ["bearer", "api_key"])
    assert.isUndefined(findToolkit("gitlab"))
  })

  it("names every tool and trigger <toolkit>.<name> inside its own toolkit, once", () => {
    const all = toolkits.flatMap((toolkit) => [...toolkit.tools, ...toolkit.triggers].map((entry) => ({ toolkit, entry })))
    for (const { toolkit, entry } of all) {
      assert.strictEqual(entry.toolkit, toolkit.name)
      assert.isTrue(entry.name.startsWith(`${toolkit.name}.`), entry.name)
      assert.match(entry.name.slice(toolkit.name.length + 1), /^[a-z][a-z0-9_]*$/)
    }
    assert.strictEqual(new Set(all.map(({ entry }) => entry.name)).size, all.length)
  })

  it("filters tools by capability and toolkit", () => {
    assert.deepStrictEqual(names(listTools({ capability: "messaging" })), ["slack.post_message"])
    assert.deepStrictEqual(names(listTools({ capability: "issues" })), ["github.create_issue"])
    assert.deepStrictEqual(names(listTools({ capability: "http" })), ["http.request"])
    assert.deepStrictEqual(names(listTools({ toolkit: "demo" })), ["demo.echo", "demo.sleep", "demo.fail", "demo.digest"])
    assert.deepStrictEqual(listTools({ capability: "nothing" }), [])
    assert.strictEqual(listTools().length, 7)
  })

  it("filters triggers by capability and delivery mode", () => {
    assert.deepStrictEqual(names(listTriggers({ deliveryMode: "polling" })), ["github.issue_opened"])
    assert.deepStrictEqual(names(listTriggers({ deliveryMode: "push" })), ["demo.event", "slack.message_posted"])
    assert.deepStrictEqual(names(listTriggers({ capability: "messaging", deliveryMode: "push" })), ["slack.message_posted"])
    assert.deepStrictEqual(listTriggers({ capability: "issues", deliveryMode: "push" }), [])
    assert.strictEqual(listTriggers().length, 3)
  })

  it("finds tools and triggers by canonical or wire name", () => {
    assert.strictEqual(findTool("slack.post_message")?.name, "slack.post_message")
    assert.strictEqual(findTool("slack__post_message")?.name, "slack.post_message")
    assert.strictEqual(findTool("demo__echo")?.name, "demo.echo")
    assert.strictEqual(findTool(toWireName("github.create_issue"))?.name, "github.create_issue")
    assert.strictEqual(toWireName("slack.post_message"), "slack__post_message")
    assert.strictEqual(findTrigger("github__issue_opened")?.deliveryMode, "polling")
    assert.strictEqual(findTrigger("slack.message_posted")?.deliveryMode, "push")
    for (const unknown of ["demo.nope", "demo_echo", "demo", "", "__echo", "demo__", "demo.echo__x", "service.search_tools"]) {
      assert.isUndefined(findTool(unknown), unknown)
    }
    assert.isUndefined(findTrigger("demo.echo"))
    assert.isUndefined(findTool("demo.event"))
  })

  it("declares schemas, timeouts and scopes on every tool", () => {
    for (const tool of listTools()) {
      assert.strictEqual(tool.inputSchema["type"], "object", tool.name)
      assert.strictEqual(tool.outputSchema["type"], "object", tool.name)
      assert.isAbove(tool.timeoutMs, 0)
      assert.match(tool.version, /^\d+\.\d+\.\d+$/)
    }
    assert.isTrue(findTool("demo.sleep")?.asyncByNature)
    assert.isAbove(findTool("demo.sleep")?.timeoutMs ?? 0, 600_000)
    assert.deepStrictEqual(listTools().filter((tool) => tool.asyncByNature).map((tool) => tool.name), ["demo.sleep"])
    assert.deepStrictEqual(findTool("slack.post_message")?.scopes, ["chat:write"])
    assert.deepStrictEqual(findTool("github.create_issue")?.scopes, ["issues:write"])
  })

  it("marks pure only tools that compute in the service: no connection, no files, no outside world", () => {
    const pure = listTools().filter((tool) => tool.pure)
    assert.deepStrictEqual(names(pure), ["demo.echo", "demo.fail"])
    for (const tool of pure) {
      // A pure run is recorded only once it has finished, so it must be quick and harmless to repeat.
      assert.isFalse(tool.asyncByNature, tool.name)
      assert.deepStrictEqual(findToolkit(tool.toolkit)?.authClasses, ["none"], tool.name)
      assert.strictEqual(tool.annotations.readOnlyHint, true, tool.name)
      assert.strictEqual(tool.annotations.openWorldHint, false, tool.name)
    }
  })
})

describe("decodeToolInput", () => {
  it.effect("rejects unknown fields and names them", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError("demo.sleep", { ms: 5, extra: true }), "\"extra\"")
      assert.include(yield* decodeError("slack.post_message", { channel: "C1", text: "hi", as_user: true }), "\"as_user\"")
      assert.include(yield* decodeError("github.create_issue", { owner: "o", repo: "r", title: "t", labels: [] }), "\"labels\"")
      assert.include(yield* decodeError("http.request", { method: "GET", url: "https://a.example", timeout: 1 }), "\"timeout\"")
      assert.include(yield* decodeError("demo.sleep", JSON.parse("{\"ms\":1,\"__proto__\":{}}")), "__proto__")
    }))

  it.effect("bounds demo.sleep to integers from 0 to 600000", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* decodes("demo.sleep", { ms: 0 }), { ms: 0 })
      assert.deepStrictEqual(yield* decodes("demo.sleep", { ms: 600_000 }), { ms: 600_000 })
      assert.include(yield* decodeError("demo.sleep", { ms: 600_001 }), "field \"ms\"")
      assert.include(yield* decodeError("demo.sleep", { ms: -1 }), "field \"ms\"")
      assert.include(yield* decodeError("demo.sleep", { ms: 1.5 }), "integer")
      assert.include(yield* decodeError("demo.sleep", { ms: "5" }), "field \"ms\"")
      assert.include(yield* decodeError("demo.sleep", {}), "field \"ms\" is required")
      assert.include(yield* decodeError("demo.sleep", null), "demo.sleep")
    }))

  it.effect("accepts any JSON object for demo.echo but not other values", () =>
    Effect.gen(function*() {
      const value = { a: [1, "two", { three: null }], b: true }
      assert.deepStrictEqual(yield* decodes("demo.echo", value), value)
      yield* decodeError("demo.echo", [1, 2])
      yield* decodeError("demo.echo", "text")
    }))

  it.effect("checks nested values: headers, URLs, owners and repositories", () =>
    Effect.gen(function*() {
      assert.include(yield* decodeError("http.request", { method: "GET", url: "https://a.example", headers: { x: 1 } }), "headers.x")
      yield* decodeError("http.request", { method: "GET", url: "ftp://a.example" })
      yield* decodeError("http.request", { method: "TRACE", url: "https://a.example" })
      yield* decodes("http.request", { method: "POST", url: "HTTPS://A.example/x", headers: { a: "b" }, body: "{}" })
      yield* decodeError("github.create_issue", { owner: "o", repo: "..", title: "t" })
      yield* decodeError("github.create_issue", { owner: "o/x", repo: "r", title: "t" })
      yield* decodeError("github.create_issue", { owner: "o", repo: "r", title: "" })
      yield* decodeError("demo.fail", { code: "not_found" })
      yield* decodeError("demo.fail", { code: "rate_limited", retryAfter: -1 })
      yield* decodeError("demo.digest", { fileId: "exe_0123456789abcdefghjkmnpqrstvwx" })
    }))
})

describe("decodeTriggerFilters", () => {
  it.effect("accepts each trigger's portable filters and rejects the rest", () =>
    Effect.gen(function*() {
      const demo = findTrigger("demo.event")
      const slack = findTrigger("slack.message_posted")
      const github = findTrigger("github.issue_opened")
      if (demo === undefined || slack === undefined || github === undefined) return assert.fail("missing trigger")
      assert.deepStrictEqual(yield* decodeTriggerFilters(demo, {}), {})
      assert.deepStrictEqual(yield* decodeTriggerFilters(demo, { type: "ping" }), { type: "ping" })
      assert.include((yield* Effect.flip(decodeTriggerFilters(demo, { kind: "x" }))).message, "\"kind\"")
      assert.deepStrictEqual(yield* decodeTriggerFilters(slack, { channel: "C1" }), { channel: "C1" })
      yield* Effect.flip(decodeTriggerFilters(slack, { team: "T1" }))
      yield* decodeTriggerFilters(github, { owner: "octo", repo: "hello", labels: ["bug"] })
      assert.include((yield* Effect.flip(decodeTriggerFilters(github, { owner: "octo" }))).message, "\"repo\" is required")
    }))
})
