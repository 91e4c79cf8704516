/**
 * A history row's aggregate `deliveryStatus` (decisions.md section 5), computed when the row is
 * read from its arrival's phase and the current status of each delivery it materialized, so it
 * follows the deliveries as they move without a write per attempt:
 *
 * - `not_enqueued` (a duplicate), `selecting`, `admission_failed`, `no_targets`: the phase itself;
 * - otherwise the targets': `pending` while no target has had an attempt, `delivering` while some
 *   target is unfinished and at least one has moved (an attempt made, or finished), `succeeded`
 *   or `failed` when all finished alike, `partial` when all finished, some each way.
 *
 * A target whose delivery no longer has a record counts as failed (its endpoint's history went
 * with the endpoint).
 */
import type { Phase } from "./TriggerEvent.ts"

export type TargetStatus = "pending" | "delivering" | "succeeded" | "failed"

export type AggregateStatus =
  | "not_enqueued"
  | "admission_failed"
  | "selecting"
  | "no_targets"
  | "pending"
  | "delivering"
  | "succeeded"
  | "failed"
  | "partial"

const finished = (status: TargetStatus) => status === "succeeded" || status === "failed"

export const aggregateStatus = (phase: Phase, targets: ReadonlyArray<TargetStatus>): AggregateStatus => {
  if (phase !== "targets") return phase
  if (targets.length === 0) return "no_targets"
  if (targets.every((status) => status === "pending")) return "pending"
  if (!targets.every(finished)) return "delivering"
  if (targets.every((status) => status === "succeeded")) return "succeeded"
  if (targets.every((status) => status === "failed")) return "failed"
  return "partial"
}
