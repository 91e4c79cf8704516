import { unknownToAttributeValue } from "effect/observability/OtlpResource"
import { describe, expect, it } from "vitest"
import { flattenRecord } from "../../../infra/observability/LogRecordFields.ts"

// The body as Effect's OTLP logger makes it from `Effect.logInfo(message, fields)`.
const bodyOf = (...message: ReadonlyArray<unknown>) => unknownToAttributeValue(message)

describe("OTLP log records' fields", () => {
  it("become attributes, the body the message alone", () => {
    const flattened = flattenRecord(bodyOf("request", { method: "GET", route: "/v1/me", status: 200, ok: true }), [{ key: "effect.fiberId", value: { intValue: 7 } }])
    expect(flattened?.body).toEqual({ stringValue: "request" })
    expect(flattened?.attributes).toEqual([
      { key: "effect.fiberId", value: { intValue: 7 } },
      { key: "method", value: { stringValue: "GET" } },
      { key: "route", value: { stringValue: "/v1/me" } },
      { key: "status", value: { intValue: 200 } },
      { key: "ok", value: { boolValue: true } }
    ])
  })

  it("keep an attribute already set, and a part that is no object in the body", () => {
    const flattened = flattenRecord(bodyOf("attempt failed", "plain text", { endpointId: "whe_1", route: "other" }), [{ key: "route", value: { stringValue: "annotated" } }])
    expect(flattened?.body).toEqual({ arrayValue: { values: [{ stringValue: "attempt failed" }, { stringValue: "plain text" }] } })
    expect(flattened?.attributes).toEqual([{ key: "route", value: { stringValue: "annotated" } }, { key: "endpointId", value: { stringValue: "whe_1" } }])
  })

  it("leave a record without fields as it is", () => {
    expect(flattenRecord(bodyOf("listening"), [])).toBeUndefined()
    expect(flattenRecord({ stringValue: "listening" }, [])).toBeUndefined()
    expect(flattenRecord(bodyOf("a", "{not json"), [])).toBeUndefined()
  })
})
