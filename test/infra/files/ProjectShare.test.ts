/**
 * A project's share of staged files (SERVICE_FILE_PROJECT_MAX_BYTES) under concurrency, with the
 * interleaving that let a clean-clone CI run take 11 files against a room of 10: an upload (X)
 * reads the project's total before another (Y) commits, and Y's reservation is released before
 * X checks, so Y's file was counted neither in X's total nor in the reservations. Releases now
 * wait for an admission in progress, so X sees Y one way or the other and is refused.
 */
import { Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { type FileBackend, makeMemoryBackend, makeStagedFiles } from "../../../infra/files/StagedFiles.ts"

const SIZE = 600
const content = Buffer.alloc(SIZE, 1).toString("base64")

describe("a project's share of staged files", () => {
  it("refuses the upload that would pass the share when another commits between its read of the total and its check", async () => {
    const outcome = await Effect.runPromise(Effect.gen(function*() {
      const inner = makeMemoryBackend()
      const yInInsert = yield* Deferred.make<void>()
      const yInsertGo = yield* Deferred.make<void>()
      const xRead = yield* Deferred.make<void>()
      const xGo = yield* Deferred.make<void>()
      let usageCalls = 0
      let inserts = 0
      const backend: FileBackend = {
        ...inner,
        // The second read of the total (X's) is taken, then held until the test lets it go.
        usage: (projectId, nowMs) =>
          Effect.gen(function*() {
            const usage = yield* inner.usage(projectId, nowMs)
            if (++usageCalls === 2) {
              yield* Deferred.succeed(xRead, undefined)
              yield* Deferred.await(xGo)
            }
            return usage
          }),
        // The first insert (Y's) waits, inside its admission, until X has read the total.
        insert: (record, bytes) =>
          Effect.gen(function*() {
            if (++inserts === 1) {
              yield* Deferred.succeed(yInInsert, undefined)
              yield* Deferred.await(yInsertGo)
            }
            yield* inner.insert(record, bytes)
          })
      }
      const files = makeStagedFiles(backend, { maxBytes: 10_000, ttlMs: 60_000, projectMaxBytes: 1_000 })
      const upload = (name: string) => Effect.exit(files.stage({ projectId: "p", name, content }))

      const y = yield* Effect.forkChild(upload("y.bin"))
      yield* Deferred.await(yInInsert)
      const x = yield* Effect.forkChild(upload("x.bin"))
      yield* Deferred.await(xRead)
      // Y commits; before the fix its reservation was released at once, while X held its old total.
      yield* Deferred.succeed(yInsertGo, undefined)
      yield* Effect.sleep("50 millis")
      yield* Deferred.succeed(xGo, undefined)
      return { y: yield* Fiber.join(y), x: yield* Fiber.join(x), stored: (yield* inner.usage("p", Date.now())).bytes }
    }))
    expect(Exit.isSuccess(outcome.y)).toBe(true)
    expect(Exit.isFailure(outcome.x)).toBe(true)
    expect(outcome.stored).toBe(SIZE)
  })
})
