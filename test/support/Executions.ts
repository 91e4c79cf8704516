/**
 * Synthetic terminal executions for webhook tests, appended straight to the log the way the
 * executions feature records them: a stream of type `execution` whose terminal event carries the
 * public record in `data.record`.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { type ExecutionEvent, executionCodec, STREAM_TYPE, streamId } from "../../domain/executions/Execution.ts"
import type { ExecutionRecord } from "../../domain/executions/ExecutionRecord.ts"
import { EventStore, type RecordedEvent } from "../../infra/eventlog/EventStore.ts"
import { newId } from "../../infra/Ids.ts"
import { layerPgEventStore } from "../../infra/eventlog/PgEventStore.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { projections as allProjections } from "../../src/App.ts"

export type Outcome = "succeeded" | "failed" | "cancelled"

export const executionRecord = (projectId: string, outcome: Outcome, executionId = newId("exe")): ExecutionRecord => {
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
    latencyMs: 0
  } as const
  if (outcome === "succeeded") return { ...base, status: outcome, output: { ok: true } }
  if (outcome === "failed") return { ...base, status: outcome, error: { code: "provider_error", message: "upstream said no", retryable: false } }
  return {
    ...base,
    status: outcome,
    error: { code: "execution_cancelled", message: "cancelled by the user", retryable: false },
    cancellation: { dispatchMayHaveBegun: false }
  }
}

const terminalEvent = (record: ExecutionRecord): ExecutionEvent => {
  switch (record.status) {
    case "succeeded":
      return { type: "ExecutionSucceeded", record }
    case "failed":
      return { type: "ExecutionFailed", record }
    default:
      return { type: "ExecutionCancelled", dispatchMayHaveBegun: false, record }
  }
}

export const appendTerminal = (projectId: string, outcome: Outcome): Effect.Effect<RecordedEvent, unknown, EventStore> =>
  Effect.gen(function*() {
    const store = yield* EventStore
    const executionId = newId("exe")
    const record = executionRecord(projectId, outcome, executionId)
    const [recorded] = yield* store.append([{
      streamId: streamId(executionId),
      streamType: STREAM_TYPE,
      expectedVersion: 0,
      events: [executionCodec.encode(terminalEvent(record), newId("evt"))]
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
