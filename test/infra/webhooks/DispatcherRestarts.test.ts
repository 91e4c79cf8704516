/**
 * The dispatcher's followers restart after a failure (the store away); an outage is logged at the
 * 1st, 2nd, 4th, 8th… failure in a row, not once a second (outside audit: a database away for 8 s
 * wrote "webhook watcher failed; restarting" 8 times).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Logger } from "effect"
import { TestClock } from "effect/testing"
import { StoreUnavailable } from "../../../infra/eventlog/EventStore.ts"
import { toRecord } from "../../../infra/observability/Logging.ts"
import { forever } from "../../../infra/webhooks/WebhookDispatcher.ts"

describe("the dispatcher's restarts", () => {
  it.effect("log a run of failures at the 1st, 2nd, 4th and 8th, and a new run from the 1st again", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      let failing = true
      const runs = { count: 0 }
      const follower = Effect.suspend(() => {
        runs.count++
        return failing ? Effect.fail(new StoreUnavailable({ cause: new Error("connection refused") })) : Effect.void
      })
      const fiber = yield* Effect.forkChild(forever("watcher", follower, 1000).pipe(
        Effect.provide(Logger.layer([Logger.make((options) => void lines.push(toRecord(options).message))]))
      ))
      yield* TestClock.adjust(9_500)
      assert.strictEqual(runs.count, 10)
      assert.deepStrictEqual(lines, [1, 2, 4, 8].map((n) => `webhook watcher failed; restarting (${n} in a row)`))
      // The store answers for a while: the next failure starts a new run.
      failing = false
      yield* TestClock.adjust(20_000)
      failing = true
      yield* TestClock.adjust(1_000)
      assert.strictEqual(lines.at(-1), "webhook watcher failed; restarting (1 in a row)")
      yield* Fiber.interrupt(fiber)
    }))
})
