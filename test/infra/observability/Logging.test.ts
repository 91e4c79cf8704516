/**
 * Log lines of failures: an expected failure (a store outage, a refused attempt) says why in one
 * short line, the chain of its causes' messages; only a defect (a bug) keeps its stack. Before,
 * a StoreUnavailable passed as a message part was logged as `"details":""`, saying nothing, and
 * as a cause as about 1.5 KB of nested stacks per warning, all through an outage.
 */
import { Cause, Effect, Logger } from "effect"
import { describe, expect, it } from "vitest"
import { StoreUnavailable } from "../../../infra/eventlog/EventStore.ts"
import { formatJsonLine, isoTime, redactDeep, redactText, toRecord } from "../../../infra/observability/Logging.ts"

const linesOf = async (program: Effect.Effect<void>): Promise<ReadonlyArray<Record<string, unknown>>> => {
  const lines: Array<string> = []
  const logger = Logger.make((options) => lines.push(formatJsonLine(toRecord(options))))
  await Effect.runPromise(program.pipe(Effect.provide(Logger.layer([logger]))))
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** As the Postgres client reports a refused connection: its error, caused by the socket's. */
const refused = () => {
  const socket = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })
  const client = Object.assign(new Error("PgConnection: Failed to connect", { cause: socket }), { _tag: "SqlError" })
  return new StoreUnavailable({ cause: client })
}

describe("log lines of failures", () => {
  it("an error among the message's parts is the chain of its causes' messages", async () => {
    const [line] = await linesOf(Effect.logWarning("webhook delivery records not written yet; retrying", refused()))
    expect(line!.details).toBe("StoreUnavailable; cause: SqlError: PgConnection: Failed to connect; cause: Error: connect ECONNREFUSED 127.0.0.1:5432")
  })

  it("a cause of expected failures is the same short chain, with no stack", async () => {
    const [line] = await linesOf(Effect.fail(refused()).pipe(Effect.catchCause((cause) => Effect.logWarning("webhook lane failed; retrying", cause))))
    expect(line!.cause).toBe("StoreUnavailable; cause: SqlError: PgConnection: Failed to connect; cause: Error: connect ECONNREFUSED 127.0.0.1:5432")
    expect(JSON.stringify(line).length).toBeLessThan(400)
  })

  it("a defect keeps its stack: it is a bug to find", async () => {
    const [line] = await linesOf(Effect.die(new Error("boom")).pipe(Effect.catchCause((cause) => Effect.logWarning("adapter failed unexpectedly", cause))))
    expect(String(line!.cause)).toMatch(/Error: boom\n\s+at /)
  })

  it("a chain that loops, or runs deep, ends", async () => {
    const a: Error & { cause?: unknown } = new Error("a")
    const b = new Error("b", { cause: a })
    a.cause = b
    const [line] = await linesOf(Effect.logWarning("looping", Cause.squash(Cause.fail(a))))
    expect(String(line!.details).split("; cause: ").length).toBeLessThanOrEqual(5)
  })
})

describe("the line's time and fields, written the cheap way", () => {
  it("the time is what toISOString writes, in and across seconds and at the ends of its range", () => {
    const instants = [
      0, 1, 9, 10, 99, 100, 999, 1_000, 1_001, 59_999, 60_000,
      Date.UTC(2026, 10, 27, 11, 59, 59, 999), Date.UTC(2026, 10, 27, 12, 0, 0, 0), Date.UTC(2026, 10, 27, 12, 0, 0, 7),
      253_402_300_799_999, 253_402_300_800_000, -1, -62_198_755_200_000
    ]
    for (const ms of [...instants, ...instants.toReversed()]) expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString())
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError)
  })

  it("numbers are written as JSON writes them, and a secret field stays redacted however often it is seen", async () => {
    const lines = await linesOf(Effect.forEach([1, 2], () =>
      Effect.logInfo("request", { status: 200, durationMs: 0.125, odd: Number.NaN, far: Number.POSITIVE_INFINITY, apiKey: "sk_live_abcdefgh" })))
    for (const line of lines) {
      expect(line).toMatchObject({ status: 200, durationMs: 0.125, odd: null, far: null, apiKey: "[redacted]" })
    }
  })
})

// Outside audit: a `whsec_…` or `sk_…` value with `_` or `-` among its first four characters
// (about one webhook secret in eight: they are base64url) was written whole; a query token in a
// URL was written whole; the exporters' records skipped the step.
describe("redaction", () => {
  it("hides signing secrets and keys past their prefix whatever base64url characters they start with", () => {
    expect(redactText("/v1/ingest/x/whsec_t_B8Sn8gtI6hIB5oBwU8mL4LtfQYX4OWM4ky0MRjcgA")).not.toContain("gtI6hIB5")
    expect(redactText("key whsec_t_B8Sn8gtI6hIB5oBwU8mL4LtfQYX4OWM4ky0MRjcgA")).toBe("key whsec_t_B8…[redacted]")
    expect(redactText("key sk_x-SECRETCANARY")).toBe("key sk_x-SE…[redacted]")
  })

  it("hides the values of query parameters named like credentials, and nothing else of the query", () => {
    expect(redactText("export to https://c.example/p?api_key=abc123&region=eu&access_token=zz#f failed"))
      .toBe("export to https://c.example/p?api_key=[redacted]&region=eu&access_token=[redacted]#f failed")
    expect(redactText("GET /hooks?X-Amz-Signature=deadbeef&page=2")).toBe("GET /hooks?X-Amz-Signature=[redacted]&page=2")
  })

  it("writes an ingest path's first segment only when it is a subscription id", () => {
    expect(redactText("/v1/ingest/trgsub_0123456789abcdefghjkmnpqrs/s3cr3t")).toBe("/v1/ingest/trgsub_0123456789abcdefghjkmnpqrs/[redacted]")
    expect(redactText("/v1/ingest/Bearer%20SECRETCANARY/x")).toBe("/v1/ingest/[redacted]/[redacted]")
    expect(redactText("route=/v1/ingest/:subscriptionId/:secret")).toBe("route=/v1/ingest/:subscriptionId/:secret")
  })

  it("reads a long line of query-like text in one pass", () => {
    const line = `${"?".repeat(100_000)}${"&a".repeat(50_000)}=`
    expect(redactText(line)).toBe(line)
  })

  it("applies to telemetry records: every string, and attributes named like secrets", () => {
    const record = {
      body: { stringValue: "POST /v1/ingest/sk_R3gC20cZNMr5tlAXdK9FiNpAXvx5K2DpAmiqSwlE/x" },
      attributes: [
        { key: "exception.message", value: { stringValue: "Unknown toolkit \"whsec_abcdSECRETCANARY\"" } },
        { key: "webhook.secret", value: { stringValue: "plain" } },
        { key: "status", value: { intValue: 200 } }
      ],
      timeUnixNano: "1764400000000000000"
    }
    expect(redactDeep(record)).toEqual({
      body: { stringValue: "POST /v1/ingest/[redacted]/[redacted]" },
      attributes: [
        { key: "exception.message", value: { stringValue: "Unknown toolkit \"whsec_abcd…[redacted]\"" } },
        { key: "webhook.secret", value: { stringValue: "[redacted]" } },
        { key: "status", value: { intValue: 200 } }
      ],
      timeUnixNano: "1764400000000000000"
    })
  })
})
