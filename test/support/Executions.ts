/**
 * Synthetic terminal executions for webhook tests, appended straight to the log the way the
 * executions feature records them: a stream of type `execution` whose terminal event carries the
 * public record in `data.record`.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { EventStore, type Json, type RecordedEvent } from "../../infra/eventlog/EventStore.ts"
import { newId } from "../../infra/Ids.ts"
import { layerPgEventStore } from "../../infra/eventlog/PgEventStore.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { projections as allProjections } from "../../src/App.ts"

export type Outcome = "succeeded" | "failed" | "cancelled"

const EVENT_TYPE: Record<Outcome, string> = {
  succeeded: "ExecutionSucceeded",
  failed: "ExecutionFailed",
  cancelled: "ExecutionCancelled"
}

export const executionRecord = (projectId: string, outcome: Outcome, executionId = newId("exe")) => {
  const now = new Date().toISOString()
  const base = {
    executionId,
    projectId,
    userId: "user_1",
    tool: "demo.echo",
    toolVersion: "1",
    catalogVersion: "test",
    mode: "async",
    createdAt: now,
    startedAt: now,
    completedAt: now,
    status: outcome
  }
  if (outcome === "succeeded") return { ...base, output: { ok: true } }
  const error = outcome === "failed"
    ? { code: "provider_error", message: "upstream said no", retryable: false }
    : { code: "execution_cancelled", message: "cancelled by the user", retryable: false }
  return outcome === "cancelled" ? { ...base, error, dispatchMayHaveBegun: false } : { ...base, error }
}

export const appendTerminal = (projectId: string, outcome: Outcome): Effect.Effect<RecordedEvent, unknown, EventStore> =>
  Effect.gen(function*() {
    const store = yield* EventStore
    const executionId = newId("exe")
    const record = executionRecord(projectId, outcome, executionId)
    const [recorded] = yield* store.append([{
      streamId: `execution-${executionId}`,
      streamType: "execution",
      expectedVersion: 0,
      events: [{ eventId: newId("evt"), type: EVENT_TYPE[outcome], schemaVersion: 1, data: { record } as unknown as Json }]
    }])
    if (recorded === undefined) throw new Error("append returned nothing")
    return recorded
  })

/** An event store on the given database, beside a service process using the same one. */
export const pgLog = (url: string) =>
  ManagedRuntime.make(
    layerPgEventStore.pipe(
      Layer.provide(Layer.succeed(Projections, allProjections)),
      Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 4 }))
    )
  )
