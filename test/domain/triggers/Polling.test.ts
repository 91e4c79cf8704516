import { describe, expect, it } from "vitest"
import { advanceCursor, askedSince, initialCursor, isNewIssue, MAX_BACKOFF_MS, MAX_OPENED, nextLink, nextPoll } from "../../../domain/triggers/Polling.ts"

const baseline = "2026-01-01T00:00:00.000Z"

describe("polling policy", () => {
  it("the baseline: issues created before the subscription are never new", () => {
    const cursor = initialCursor(baseline)
    expect(cursor).toEqual({ since: baseline, baseline })
    expect(isNewIssue(cursor, { createdAt: "2025-12-31T23:59:59Z", updatedAt: "2026-01-02T00:00:00Z" })).toBe(false)
    expect(isNewIssue(cursor, { createdAt: "2026-01-01T00:00:01Z", updatedAt: "2026-01-01T00:00:01Z" })).toBe(true)
  })

  it("GitHub's times are whole seconds: the first since is the subscription's second, and an issue created in it is new", () => {
    // An issue opened 0.3 s after a subscription made at .557 reads `00:00:00Z`, and GitHub
    // leaves out an issue updated before a `since` of `00:00:00.557Z` (outside audit).
    const cursor = initialCursor("2026-01-01T00:00:00.557Z")
    expect(cursor.since).toBe("2026-01-01T00:00:00.000Z")
    expect(isNewIssue(cursor, { createdAt: "2026-01-01T00:00:00Z", updatedAt: "2026-01-01T00:00:00Z" })).toBe(true)
    expect(isNewIssue(cursor, { createdAt: "2025-12-31T23:59:59Z", updatedAt: "2026-01-01T00:00:00Z" })).toBe(false)
  })

  it("since follows the newest updated_at; an old issue updated later is not new", () => {
    const cursor = advanceCursor(initialCursor(baseline), [
      { createdAt: "2026-01-02T00:00:00Z", updatedAt: "2026-01-02T00:00:00Z" },
      { createdAt: "2026-01-03T00:00:00Z", updatedAt: "2026-01-04T00:00:00Z" }
    ], '"etag-1"')
    expect(cursor).toEqual({ since: "2026-01-04T00:00:00Z", baseline, watermark: "2026-01-03T00:00:00Z" })
    expect(isNewIssue(cursor, { createdAt: "2026-01-02T00:00:00Z", updatedAt: "2026-01-05T00:00:00Z" })).toBe(false)
    expect(isNewIssue(cursor, { createdAt: "2026-01-02T23:55:00Z", updatedAt: "2026-01-05T00:00:00Z" })).toBe(true)
  })

  it("asks from a minute before since, never before the subscription's second, so an issue listed late is still listed", () => {
    expect(askedSince(initialCursor("2026-01-01T00:00:00.557Z"))).toBe("2026-01-01T00:00:00.000Z")
    const cursor = advanceCursor(initialCursor(baseline), [{ createdAt: "2026-01-02T00:00:00Z", updatedAt: "2026-01-02T00:00:00Z" }], undefined)
    expect(askedSince(cursor)).toBe("2026-01-01T23:59:00.000Z")
    // A late issue dated just before the newest one seen is within the question and still new.
    expect(isNewIssue(cursor, { id: 5, createdAt: "2026-01-01T23:59:57Z", updatedAt: "2026-01-01T23:59:57Z" })).toBe(true)
    expect(askedSince(advanceCursor(initialCursor(baseline), [{ createdAt: "2026-01-01T00:00:30Z", updatedAt: "2026-01-01T00:00:30Z" }], undefined))).toBe("2026-01-01T00:00:00.000Z")
  })

  it("an issue delivered once is never new again, however late it is edited (its dedup claim lasts 24 h; the cursor, as long as it can matter)", () => {
    // Outside audit: the newest issue of a quiet repository, edited more than 24 h after it was
    // delivered, was delivered again as opened, under a new event id.
    const listed = { id: 7777, createdAt: "2026-01-02T00:00:00Z", updatedAt: "2026-01-02T00:00:00Z" }
    const cursor = advanceCursor(initialCursor(baseline), [listed], undefined, [listed])
    expect(isNewIssue(cursor, { ...listed, updatedAt: "2026-01-05T00:00:00Z" })).toBe(false)
    // Another issue of the same minutes, never delivered (say, filtered out until now), still is.
    expect(isNewIssue(cursor, { id: 7778, createdAt: "2026-01-01T23:58:00Z", updatedAt: "2026-01-05T00:00:00Z" })).toBe(true)
    // What the cursor remembers stays within the watermark's overlap: older ones are old by their date.
    const later = { id: 9000, createdAt: "2026-01-03T00:00:00Z", updatedAt: "2026-01-03T00:00:00Z" }
    const moved = advanceCursor(cursor, [later], undefined, [later])
    expect(moved.opened).toEqual([{ id: 9000, createdAt: "2026-01-03T00:00:00Z" }])
    expect(isNewIssue(moved, { ...listed, updatedAt: "2026-01-06T00:00:00Z" })).toBe(false)
    expect(isNewIssue(moved, { ...later, updatedAt: "2026-01-06T00:00:00Z" })).toBe(false)
    // Bounded: a flood of issues in one window keeps the newest.
    const flood = Array.from({ length: MAX_OPENED + 50 }, (_, i) => ({ id: 20_000 + i, createdAt: new Date(Date.parse("2026-01-04T00:00:00Z") + i * 100).toISOString(), updatedAt: "2026-01-04T01:00:00Z" }))
    const full = advanceCursor(moved, flood, undefined, flood)
    expect(full.opened).toHaveLength(MAX_OPENED)
    expect(full.opened?.at(-1)?.id).toBe(20_000 + MAX_OPENED + 49)
  })

  it("the ETag is kept while the question (since) stays the same, so an unchanged list is a 304", () => {
    const first = advanceCursor(initialCursor(baseline), [], '"empty"')
    expect(first.etag).toBe('"empty"')
    const seen = [{ createdAt: "2026-01-02T00:00:00Z", updatedAt: "2026-01-02T00:00:00Z" }]
    const moved = advanceCursor(first, seen, '"a"')
    expect(moved.etag).toBeUndefined()
    expect(advanceCursor(moved, seen, '"b"').etag).toBe('"b"')
  })

  it("the cadence, the provider's wait, or doubling up to 15 minutes", () => {
    expect(nextPoll({ kind: "listed" }, 60_000, 3)).toEqual({ delayMs: 60_000, failures: 0 })
    expect(nextPoll({ kind: "not_modified" }, 60_000, 0)).toEqual({ delayMs: 60_000, failures: 0 })
    expect(nextPoll({ kind: "refused" }, 60_000, 2)).toEqual({ delayMs: 60_000, failures: 0 })
    expect(nextPoll({ kind: "backoff" }, 60_000, 0)).toEqual({ delayMs: 120_000, failures: 1 })
    expect(nextPoll({ kind: "backoff" }, 60_000, 1)).toEqual({ delayMs: 240_000, failures: 2 })
    expect(nextPoll({ kind: "backoff" }, 60_000, 9)).toEqual({ delayMs: MAX_BACKOFF_MS, failures: 10 })
    expect(nextPoll({ kind: "backoff", waitMs: 7_000 }, 2_000, 0)).toEqual({ delayMs: 7_000, failures: 1 })
    expect(nextPoll({ kind: "backoff", waitMs: 120_000 }, 60_000, 0)).toEqual({ delayMs: 120_000, failures: 1 })
  })

  it("a rate limit without a wait given (GitHub's secondary limit) waits a minute, then doubles up to 15 minutes", () => {
    // It waited 60 s every time, never longer: with a 60 s cadence, no back-off at all (outside audit).
    const waits = [0, 1, 2, 3, 4].map((failures) => nextPoll({ kind: "backoff", minimumMs: 60_000 }, 2_000, failures).delayMs)
    expect(waits).toEqual([60_000, 120_000, 240_000, 480_000, MAX_BACKOFF_MS])
    expect(nextPoll({ kind: "backoff", minimumMs: 60_000 }, 60_000, 0)).toEqual({ delayMs: 120_000, failures: 1 })
  })

  it("never polls sooner than the cadence after a refusal (a back-off is never faster than no trouble)", () => {
    // Retry-After: 0, or an X-RateLimit-Reset already past: the outside audit saw a 60 s
    // subscription poll every second for as long as GitHub answered so.
    expect(nextPoll({ kind: "backoff", waitMs: 0 }, 60_000, 0)).toEqual({ delayMs: 60_000, failures: 1 })
    expect(nextPoll({ kind: "backoff", waitMs: 7_000 }, 60_000, 4)).toEqual({ delayMs: 60_000, failures: 5 })
    // A cadence longer than the doubling's ceiling keeps its cadence.
    expect(nextPoll({ kind: "backoff" }, 3_600_000, 0)).toEqual({ delayMs: 3_600_000, failures: 1 })
  })

  it("reads the next page from a Link header", () => {
    expect(nextLink('<https://api/x?page=2>; rel="next", <https://api/x?page=5>; rel="last"')).toBe("https://api/x?page=2")
    expect(nextLink('<https://api/x?page=1>; rel="prev"')).toBeUndefined()
    expect(nextLink(undefined)).toBeUndefined()
  })
})
