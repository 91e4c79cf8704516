/** The result table, aligned for a terminal. */
import type { Measurement } from "./Scenario.ts"

const fixed = (n: number, digits: number) => (Number.isFinite(n) ? n.toFixed(digits) : "-")

export const formatTable = (rows: ReadonlyArray<Measurement>): string => {
  const header = ["scenario", "target", "throughput", "p50 ms", "p99 ms", "ok", "failed", "note"]
  const cells = rows.map((r) => [
    r.scenario,
    r.target,
    `${fixed(r.throughput, r.unit === "MiB/s" ? 1 : 0)} ${r.unit}`,
    fixed(r.p50Ms, 2),
    fixed(r.p99Ms, 2),
    String(r.requests),
    String(r.failures),
    r.note ?? ""
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)))
  const numeric = new Set([2, 3, 4, 5, 6])
  const line = (c: ReadonlyArray<string>) =>
    c.map((v, i) => (numeric.has(i) ? v.padStart(widths[i] ?? 0) : v.padEnd(widths[i] ?? 0))).join("  ").trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...cells.map(line)].join("\n")
}
