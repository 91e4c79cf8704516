import { describe, expect, it } from "vitest"
import { normalizePushed, parsePushBody, slackSignature, verifySlackSignature } from "../../../domain/triggers/PushBody.ts"

const callback = { type: "event_callback", event_id: "Ev1", event_time: 1_700_000_000, event: { type: "message", channel: "C1", user: "U1", text: "hi", ts: "1.0" } }

describe("push body", () => {
  it("url_verification answers its challenge; event_callback keeps the whole event", () => {
    expect(parsePushBody(JSON.stringify({ type: "url_verification", challenge: "abc" }))).toEqual({ kind: "verification", challenge: "abc" })
    expect(parsePushBody(JSON.stringify({ ...callback, team_id: "T1" }))).toEqual({
      kind: "callback",
      eventId: "Ev1",
      occurredAtMs: 1_700_000_000_000,
      event: callback.event
    })
  })

  it("anything else is invalid", () => {
    for (const body of [
      "not json",
      "[]",
      "null",
      JSON.stringify({ type: "app_rate_limited" }),
      JSON.stringify({ type: "url_verification" }),
      JSON.stringify({ ...callback, event_id: "" }),
      JSON.stringify({ ...callback, event_id: 5 }),
      JSON.stringify({ ...callback, event_time: "1700000000" }),
      JSON.stringify({ ...callback, event_time: 1.5e9 + 0.5 }),
      JSON.stringify({ ...callback, event_time: 17 }),
      JSON.stringify({ ...callback, event: "message" }),
      JSON.stringify({ ...callback, event: { channel: "C1" } })
    ]) {
      expect(parsePushBody(body), body).toBeUndefined()
    }
  })

  it("checks Slack's v0 signature over the raw body, within five minutes, in constant time", () => {
    const body = JSON.stringify(callback)
    const now = 1_700_000_100_000
    const timestamp = String(now / 1000 - 10)
    const signature = slackSignature("shh", timestamp, body)
    expect(signature).toMatch(/^v0=[0-9a-f]{64}$/)
    expect(verifySlackSignature("shh", { signature, timestamp }, body, now)).toBe(true)
    expect(verifySlackSignature("shh", { signature, timestamp }, `${body} `, now)).toBe(false)
    expect(verifySlackSignature("other", { signature, timestamp }, body, now)).toBe(false)
    expect(verifySlackSignature("shh", { signature, timestamp }, body, now + 301_000)).toBe(false)
    expect(verifySlackSignature("shh", { signature: undefined, timestamp }, body, now)).toBe(false)
    expect(verifySlackSignature("shh", { signature, timestamp: undefined }, body, now)).toBe(false)
    expect(verifySlackSignature("shh", { signature: signature.slice(0, -1), timestamp }, body, now)).toBe(false)
  })

  it("normalizes by trigger and applies the filters", () => {
    expect(normalizePushed("slack.message_posted", callback.event, {})).toEqual({ channel: "C1", user: "U1", text: "hi", ts: "1.0" })
    expect(normalizePushed("slack.message_posted", callback.event, { channel: "C2" })).toBeUndefined()
    expect(normalizePushed("slack.message_posted", { ...callback.event, subtype: "message_changed" }, {})).toBeUndefined()
    expect(normalizePushed("demo.event", { type: "ping", x: 1 }, {})).toEqual({ type: "ping", x: 1 })
    expect(normalizePushed("demo.event", { type: "ping" }, { type: "pong" })).toBeUndefined()
    expect(normalizePushed("github.issue_opened", { type: "ping" }, {})).toBeUndefined()
  })
})
