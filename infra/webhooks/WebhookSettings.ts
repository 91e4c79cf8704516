/**
 * Delivery settings (decisions.md section 1): the receiver timeout and the delay before each of
 * the five attempts (tests shrink them).
 */
import { Effect } from "effect"
import { integer, parsed, Rejected } from "../Settings.ts"

export const DEFAULT_RETRY_DELAYS_MS: ReadonlyArray<number> = [0, 30_000, 120_000, 600_000, 3_600_000]

export const webhookSettings = Effect.all({
  timeoutMs: integer("SERVICE_WEBHOOK_TIMEOUT_MS", 10_000, 1, 600_000),
  retryDelaysMs: parsed("SERVICE_WEBHOOK_RETRY_DELAYS_MS", (raw): ReadonlyArray<number> | Rejected => {
    if (raw === undefined) return DEFAULT_RETRY_DELAYS_MS
    const parts = raw.split(",").map((part) => part.trim())
    return parts.length === 5 && parts.every((part) => /^\d+$/.test(part) && Number(part) <= 86_400_000)
      ? parts.map(Number)
      : new Rejected("expected 5 comma-separated delays in milliseconds (0..86400000)")
  })
})
