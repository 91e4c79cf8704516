/**
 * Memory mode stays bounded over a long run (decisions.md section 1,
 * SERVICE_MEMORY_RETENTION_MS, default 24 h): once a minute (or a tenth of the window, if that
 * is shorter), finished records older than the window are dropped with the streams they came
 * from, idle streams of the types a table names go too, and the global log's head is trimmed
 * to the window. Which rows may go is declared with each table (`TableSpec.retention`):
 * executions and deliveries once finished, trigger history once received; but what a table
 * `holds` stays (an open delivery holds the execution or trigger arrival it will send, an arrival
 * still selecting its targets holds itself). Staged files leave at their TTL (FileSweeper.ts,
 * which drains them all each minute in memory).
 *
 * Why it is safe: nothing reads a finished execution's or delivery's stream again, but to resend
 * it (then 409, the record is gone), and what an open delivery needs is held; followers of
 * the log are within seconds of its head; an idempotency claim is only compared within its own
 * window, which its stream outlives, and one whose execution a shorter window dropped is taken as
 * expired (Executions.ts). A follower more than the window behind goes on from the oldest event
 * kept.
 *
 * Postgres keeps everything: retention there is an operator's choice, not the service's.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { onStorage } from "./Database.ts"
import { layerMemory, MemoryLog, MemoryTablesService } from "./MemoryEventStore.ts"
import { Projections } from "./Projection.ts"
import { integer } from "../Settings.ts"

export const retentionSetting = integer("SERVICE_MEMORY_RETENTION_MS", 86_400_000, 1_000)

const MAX_SWEEP_EVERY_MS = 60_000

export interface SweepCounts {
  readonly rows: number
  readonly streams: number
  readonly events: number
}

/** One sweep at `now`: what went. */
export const sweep = Effect.fnUntraced(function*(retentionMs: number) {
  const tables = yield* MemoryTablesService
  const log = yield* MemoryLog
  const projections = yield* Projections
  const now = yield* Clock.currentTimeMillis
  const cutoff = now - retentionMs
  let rows = 0
  let streams = 0
  const rules = projections.flatMap((projection) => projection.tables.flatMap((table) => (table.retention === undefined ? [] : [[table.name, table.retention] as const])))
  // The streams something still needs (an open delivery's execution or arrival): they stay, and
  // every row made from them, whatever their age.
  const held = new Set<string>()
  for (const [name, rule] of rules) {
    if (rule.holds === undefined) continue
    for (const row of tables.list(name, rule.holds.query)) held.add(rule.holds.stream(row))
  }
  for (const [name, rule] of rules) {
    // Rows are kept in insertion order, which is their age order: the sweep stops at the
    // first young row, so it visits only what goes (and the few old unfinished or held ones).
    const removed = tables.removeWhile(name, (row) => {
      if (rule.since(row) >= cutoff) return "stop"
      if (!rule.finished(row) || (rule.finishedAt !== undefined && rule.finishedAt(row) >= cutoff)) return false
      const source = rule.source?.(row)
      return !held.has(rule.stream(row)) && (source === undefined || !held.has(source))
    })
    log.forget(removed.map(rule.stream))
    rows += removed.length
    streams += removed.length
    for (const also of rule.alsoStreams ?? []) {
      streams += log.forgetIdle(also.streamType, Math.min(cutoff, now - also.minimumAgeMs), held)
    }
  }
  const events = log.trimHead(cutoff)
  return { rows, streams, events } satisfies SweepCounts
})

/** Memory mode: the sweep, on a schedule, for as long as the service runs. */
export const layer = onStorage(
  Layer.effectDiscard(Effect.gen(function*() {
    const retentionMs = yield* retentionSetting
    const every = Math.max(100, Math.min(MAX_SWEEP_EVERY_MS, Math.floor(retentionMs / 10)))
    const once = sweep(retentionMs).pipe(
      Effect.tap((counts) =>
        counts.rows + counts.events > 0
          ? Effect.logDebug("memory retention: dropped records older than the window", { ...counts, retentionMs })
          : Effect.void
      ),
      Effect.catchCause((cause) => Effect.logWarning("memory retention sweep failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(Effect.delay(once, Duration.millis(every)), Schedule.forever))
  })).pipe(Layer.provide(layerMemory)),
  Layer.empty
)
