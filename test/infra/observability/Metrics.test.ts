/**
 * Counters exist from the start: a process that has not counted anything yet still serves each
 * counter at 0, so a dashboard's rate() has a series from the first scrape.
 */
import { Context } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { describe, expect, it } from "vitest"
import { recordAppend } from "../../../infra/observability/Metrics.ts"

describe("metrics of a process that has done nothing yet", () => {
  it("serves eventlog_events_appended_total at 0 before any append, then counts", () => {
    expect(PrometheusMetrics.formatUnsafe(Context.empty())).toMatch(/^eventlog_events_appended_total 0$/m)
    recordAppend(3)
    expect(PrometheusMetrics.formatUnsafe(Context.empty())).toMatch(/^eventlog_events_appended_total 3$/m)
  })
})
