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

  // Outside audit: the delivery counters appeared only with the first attempt. Their outcomes are
  // known in advance, so each series is served at 0 from the start.
  it("serves the delivery and attempt counters at 0 for each outcome before any delivery", () => {
    const text = PrometheusMetrics.formatUnsafe(Context.empty())
    for (const name of ["webhook_delivery_attempts_total", "webhook_deliveries_total"]) {
      for (const outcome of ["succeeded", "failed"]) expect(text).toMatch(new RegExp(`^${name}\\{outcome="${outcome}"\\} 0$`, "m"))
    }
  })
})
