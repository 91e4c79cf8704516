/**
 * `events tail` across a Postgres restart (a server of the test's own, test/support/OwnPostgres.ts):
 * it says on stderr that the store went away, follows again once it answers, from the last event
 * it printed, and so prints every event once. Before, it exited at the first failed read.
 */
import { Effect, Layer, Redacted } from "effect"
import { PgClient } from "@effect/sql-pg"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { EventStore } from "../../infra/eventlog/EventStore.ts"
import { layerPgEventStore } from "../../infra/eventlog/PgEventStore.ts"
import { Projections } from "../../infra/eventlog/Projection.ts"
import { runCli } from "../support/Cli.ts"
import { type OwnPostgres, ownPostgresAvailable, startOwnPostgres } from "../support/OwnPostgres.ts"
import { eventually } from "../support/WebhookReceiver.ts"

const MAIN = fileURLToPath(new URL("../../src/main.ts", import.meta.url))
const SECRET_KEY = Buffer.alloc(32, 7).toString("base64")

describe.skipIf(!ownPostgresAvailable)("events tail while Postgres restarts", () => {
  let postgres: OwnPostgres | undefined

  afterAll(async () => {
    await postgres?.destroy()
  })

  /**
   * Appends three events to a stream of its own, on a pool of its own. Its type is one the
   * command line knows (it refuses others); idempotency streams are read by their id only.
   */
  const appendThree = (url: string, streamId: string) =>
    Effect.runPromise(
      Effect.flatMap(EventStore, (store) =>
        store.append([{
          streamId,
          streamType: "idempotency",
          expectedVersion: 0,
          events: [1, 2, 3].map((n) => ({ eventId: `evt_${streamId}_${n}`, type: "Counted", schemaVersion: 1, data: { n } }))
        }])).pipe(
          Effect.provide(layerPgEventStore.pipe(
            Layer.provide(Layer.succeed(Projections, [])),
            Layer.provideMerge(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 }))
          ))
        )
    )

  it("says the store went away, follows again from its last event, and prints every event once", async () => {
    postgres = await startOwnPostgres()
    const url = postgres.url
    // `events tail` only reads: it follows a database that `migrate` has made.
    expect((await runCli(["migrate"], { SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY })).code).toBe(0)
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SERVICE_")))
    const child = spawn(process.execPath, [MAIN, "events", "tail", "--stream-type", "idempotency"], {
      env: { ...clean, SERVICE_DATABASE_URL: url, SERVICE_SECRET_KEY: SECRET_KEY },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const printed = (streamId: string) => out.split("\n").filter((line) => line.includes(`"stream":"${streamId}"`)).length
    try {
      await eventually(() => err.includes("following after "), 30_000, `the tail to start; stderr: ${err}`)
      await appendThree(url, "before-restart")
      await eventually(() => printed("before-restart") === 3, 20_000, "the first three events")
      await postgres.stop()
      await eventually(() => err.includes("the store is unavailable"), 20_000, `the tail to notice; stderr: ${err}`)
      expect(child.exitCode).toBeNull()
      await postgres.start()
      await appendThree(url, "after-restart")
      await eventually(() => printed("after-restart") === 3, 30_000, `the events after the restart; stderr: ${err}`)
      expect(err).toMatch(/following again after \d+:\d+ once it answers/)
      // Only events on stdout: log lines (the migrations applied) go to stderr.
      const lines = out.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as { stream: string; data?: { n?: number } })
      // Every event once, in order: none twice from following again, none skipped.
      expect(lines.map((line) => `${line.stream}/${line.data?.n}`), out).toEqual([
        "before-restart/1", "before-restart/2", "before-restart/3",
        "after-restart/1", "after-restart/2", "after-restart/3"
      ])
    } finally {
      child.kill("SIGTERM")
    }
    expect(await exited).toBe(0)
  }, 120_000)
})
