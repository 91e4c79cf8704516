import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { digest, echo, fail, sleep } from "../../../infra/providers/DemoAdapters.ts"
import { adapterContext } from "../support/AdapterContext.ts"

const fileId = "file_0123456789abcdefghjkmnpqrstvwxyz"
const otherFileId = "file_zyxwvtsrqpnmkjhgfedcba9876543210"

describe("demo.echo", () => {
  it.effect("returns its input", () =>
    Effect.gen(function*() {
      const input = { a: 1, nested: { list: [true, null, "x"] } }
      assert.deepStrictEqual(yield* echo.run(input, adapterContext()), input)
    }))

  it("answers with a completed Exit, valid input or not, so dispatch needs no timeout race for it", () => {
    const ok = echo.run({ a: 1 }, adapterContext())
    assert.isTrue(Exit.isExit(ok) && Exit.isSuccess(ok))
    const refused = echo.run([1], adapterContext())
    assert.isTrue(Exit.isExit(refused) && Exit.isFailure(refused))
  })
})

describe("demo.sleep", () => {
  it.effect("sleeps for ms and reports it", () =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(sleep.run({ ms: 1_000 }, adapterContext()))
      yield* TestClock.adjust(999)
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust(1)
      assert.deepStrictEqual(yield* Fiber.join(fiber), { sleptMs: 1_000 })
    }))

  it.effect("ends at once when interrupted", () =>
    Effect.gen(function*() {
      let finished = false
      const fiber = yield* Effect.forkChild(
        sleep.run({ ms: 600_000 }, adapterContext()).pipe(Effect.ensuring(Effect.sync(() => {
          finished = true
        })))
      )
      yield* TestClock.adjust(1_000)
      yield* Fiber.interrupt(fiber)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(fiber)))
      assert.isTrue(finished)
    }))

  it.effect("refuses out-of-range input", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(sleep.run({ ms: 600_001 }, adapterContext()))
      assert.strictEqual(error.code, "invalid_input")
    }))
})

describe("demo.fail", () => {
  it.effect("fails with each requested normalized error", () =>
    Effect.gen(function*() {
      for (const code of ["provider_error", "provider_unavailable", "rate_limited", "timeout"] as const) {
        const error = yield* Effect.flip(fail.run({ code }, adapterContext()))
        assert.strictEqual(error.code, code)
      }
    }))

  it.effect("carries retryAfter on rate_limited only", () =>
    Effect.gen(function*() {
      const limited = yield* Effect.flip(fail.run({ code: "rate_limited", retryAfter: 7 }, adapterContext()))
      assert.strictEqual(limited.code, "rate_limited")
      assert.deepInclude(limited, { retryAfter: 7 })
      const other = yield* Effect.flip(fail.run({ code: "provider_error", retryAfter: 7 }, adapterContext()))
      assert.isFalse("retryAfter" in other && other.retryAfter !== undefined)
    }))
})

describe("demo.digest", () => {
  it.effect("hashes an attached file through the execution's file interface", () =>
    Effect.gen(function*() {
      const reads: Array<string> = []
      const context = adapterContext({
        files: [{ fileId, name: "hello.txt", mimeType: "text/plain", bytes: new TextEncoder().encode("hello") }],
        reads
      })
      const output = yield* digest.run({ fileId }, context)
      assert.deepStrictEqual(output, {
        sha256: "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
        size: 5
      })
      assert.deepStrictEqual(reads, [fileId])
    }))

  it.effect("hashes an empty file", () =>
    Effect.gen(function*() {
      const context = adapterContext({ files: [{ fileId, name: "empty", mimeType: "application/octet-stream", bytes: new Uint8Array() }] })
      assert.deepStrictEqual(yield* digest.run({ fileId }, context), {
        sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        size: 0
      })
    }))

  it.effect("refuses a file that is not attached as invalid input", () =>
    Effect.gen(function*() {
      const context = adapterContext({ files: [{ fileId, name: "a", mimeType: "text/plain", bytes: new Uint8Array([1]) }] })
      const error = yield* Effect.flip(digest.run({ fileId: otherFileId }, context))
      assert.strictEqual(error.code, "invalid_input")
      assert.include(error.message, "not attached")
      assert.include(error.message, otherFileId)
    }))
})
