/**
 * The gateway's own judgement of a message (mcp/MessageRules.ts) against the SDK's schema: a
 * message the schema takes is never refused as no message, and one it refuses is refused as no
 * message, or, for a request of a method the gateway knows, as invalid params. (One exception
 * the values here leave out: an integer id past 2^53 - 1, which the schema takes and the gateway
 * refuses; test/mcp/Messages.test.ts.)
 */
import { JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { checkRequest, nestedDeeperThan, notAMessage } from "../../mcp/MessageRules.ts"

const absent = Symbol("absent")
const field = <A>(values: ReadonlyArray<A>) => fc.constantFrom<A | typeof absent>(...values, absent)

const message = fc.record({
  jsonrpc: field(["2.0", "1.0", 2]),
  id: field<unknown>([1, 0, -3, "a", "", 1.5, null, {}, []]),
  method: field<unknown>(["ping", "tools/list", "tools/call", "tasks/get", "notifications/initialized", "x/y", 5, ""]),
  params: field<unknown>([
    {},
    { a: 1 },
    { _meta: {} },
    { _meta: { progressToken: "t" } },
    { _meta: { progressToken: {} } },
    { _meta: 5 },
    { name: "demo.echo", arguments: {} },
    { name: "demo.echo", arguments: [1] },
    { taskId: "exe_1" },
    [],
    5,
    null
  ]),
  result: field<unknown>([{}, { a: 1 }, 5]),
  error: field<unknown>([{ code: -1, message: "m" }, { code: "x" }]),
  extra: field<unknown>([1])
}).map((fields) => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== absent)))

describe("the gateway's message rules", () => {
  it("agree with the SDK's schema of a JSON-RPC message", () => {
    fc.assert(
      fc.property(message, (m) => {
        const sdk = JSONRPCMessageSchema.safeParse(m).success
        const refused = notAMessage(m) !== undefined
        if (sdk) expect(refused, JSON.stringify(m)).toBe(false)
        else expect(refused || checkRequest(m, "2025-11-25")?._tag === "Refused", JSON.stringify(m)).toBe(true)
      }),
      { numRuns: 5000, seed: 3 }
    )
  })

  it("count a message's nesting on its text as the parsed value has it, brackets in strings aside", () => {
    const depthOf = (value: unknown): number =>
      value !== null && typeof value === "object" ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0
    const json = fc.jsonValue({ maxDepth: 8 })
    fc.assert(
      fc.property(json, fc.integer({ min: 0, max: 9 }), (value, limit) => {
        const text = JSON.stringify(value)
        expect(nestedDeeperThan(text, limit), text).toBe(depthOf(value) > limit)
      }),
      { numRuns: 2000, seed: 5 }
    )
    expect(nestedDeeperThan(JSON.stringify({ s: "[[[[{{{{\\\"[[[[" }), 1)).toBe(false)
    expect(nestedDeeperThan(`${"[".repeat(100_000)}${"]".repeat(100_000)}`, 512)).toBe(true)
  })
})
