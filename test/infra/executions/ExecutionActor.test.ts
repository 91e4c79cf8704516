/**
 * The execution actor with a peer on the same database: a pending execution that another process
 * starts first keeps the permit its dispatch holds (the loser of the race must not free it).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decide, executionCodec, fold, STREAM_TYPE, streamId } from "../../../domain/executions/Execution.ts"
import { StateConflict } from "../../../domain/Errors.ts"
import { EventStore, type Json } from "../../../infra/eventlog/EventStore.ts"
import { Executions } from "../../../infra/executions/Executions.ts"
import { newId } from "../../../infra/Ids.ts"
import { Database } from "../../../infra/eventlog/Database.ts"
import { FeaturesLive } from "../../../src/App.ts"
import { configLayer } from "../../support/Config.ts"
import { createTestDatabase, dropTestDatabase, postgresAvailable } from "../../support/Database.ts"

const PROJECT = "proj_race"

const command = (tool: string, input: Json) => ({
  projectId: PROJECT,
  userId: "user_race",
  tool,
  input,
  mode: "async" as const,
  connectionId: undefined,
  attachments: undefined,
  idempotencyKey: undefined
})

describe.skipIf(!postgresAvailable)("execution actor with a peer on Postgres", () => {
  let url: string
  let runtime: ManagedRuntime.ManagedRuntime<Executions | EventStore | Database, unknown>

  beforeAll(async () => {
    url = await createTestDatabase("actor")
    runtime = ManagedRuntime.make(FeaturesLive.pipe(
      Layer.provide(configLayer({ SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: Buffer.alloc(32, 7).toString("base64") }))
    ))
  }, 60_000)

  afterAll(async () => {
    await runtime?.dispose()
    if (url !== undefined) await dropTestDatabase(url)
  })

  it("a pending execution started first by another process keeps the permit its dispatch here took", async () => {
    const program = Effect.gen(function*() {
      const executions = yield* Executions
      const store = yield* EventStore
      const database = yield* Database
      if (database._tag !== "Postgres") return yield* Effect.die(new Error("expected Postgres"))
      const sql = database.sql
      const status = (executionId: string) => Effect.map(executions.get(PROJECT, undefined, executionId), (r) => r.status)
      const until = (executionId: string, wanted: string) =>
        Effect.gen(function*() {
          for (let i = 0; i < 200; i++) {
            if ((yield* status(executionId)) === wanted) return
            yield* Effect.sleep("25 millis")
          }
          return yield* Effect.die(new Error(`${executionId} never became ${wanted}`))
        })
      // demo allows 4 at once: four long sleeps fill the lane, a fifth waits pending here.
      const running: Array<string> = []
      for (let i = 0; i < 4; i++) {
        running.push((yield* executions.execute(command("demo.sleep", { ms: 60_000 }))).record.executionId)
      }
      for (const id of running) yield* until(id, "running")
      const waiting = (yield* executions.execute(command("demo.sleep", { ms: 60_000 }))).record.executionId
      yield* Effect.sleep("100 millis")
      expect(yield* status(waiting)).toBe("pending")
      // A peer (which resumed it too) starts it first.
      const events = yield* store.readStream(streamId(waiting))
      const started = decide(
        { _tag: "StartDispatch", now: Date.now(), owner: "peer_owner" },
        fold(events.map(executionCodec.decode))
      )
      if (started instanceof StateConflict) return yield* Effect.die(started)
      yield* store.append([{
        streamId: streamId(waiting),
        streamType: STREAM_TYPE,
        expectedVersion: events.length,
        events: started.map((event) => executionCodec.encode(event, newId("evt")))
      }])
      // A permit frees: the dispatch here takes it, then finds the execution started elsewhere.
      yield* executions.cancel(PROJECT, undefined, running[0]!)
      const holders = sql<{ n: number }>`SELECT count(*)::int AS n FROM execution_permit_slots WHERE execution_id = ${waiting}`
      let held = 0
      for (let i = 0; i < 160 && held === 0; i++) {
        yield* Effect.sleep("25 millis")
        held = (yield* holders)[0]?.n ?? 0
      }
      expect(held).toBe(1)
      // Past the interval in which releases are written (200 ms): still held for the peer's run.
      yield* Effect.sleep("700 millis")
      expect((yield* holders)[0]?.n).toBe(1)
      expect(yield* status(waiting)).toBe("running")
      for (const id of running.slice(1)) yield* executions.cancel(PROJECT, undefined, id)
    })
    // The permit table is read on a connection of the test's own.
    await runtime.runPromise(Effect.provide(program, PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
  }, 60_000)
})
