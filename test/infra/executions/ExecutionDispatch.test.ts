import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { echo } from "../../../domain/catalog/Demo.ts"
import { ProviderError, RateLimited } from "../../../domain/Errors.ts"
import { runAdapter } from "../../../infra/executions/ExecutionDispatch.ts"
import type { AdapterContext, ToolAdapter } from "../../../infra/providers/Adapter.ts"

const context: AdapterContext = {
  executionId: "exe_1",
  projectId: "p",
  userId: "u",
  credentials: undefined,
  files: { read: () => Effect.die("no files") }
}
const plan = (timeoutMs = 1000) => ({ tool: { ...echo, timeoutMs }, input: {}, credentials: undefined, permitHeld: true })
const adapter = (run: ToolAdapter["run"]): ToolAdapter => ({ tool: "demo.echo", run })
const dispatch = (a: ToolAdapter | undefined, timeoutMs?: number) => Effect.runPromise(runAdapter(a, plan(timeoutMs), context))

describe("dispatch normalization", () => {
  it("a success carries the output", async () => {
    expect(await dispatch(adapter(() => Effect.succeed({ a: 1 })))).toEqual({ _tag: "Success", output: { a: 1 } })
  })

  it("typed failures keep their code; a provider 429 keeps retryAfter", async () => {
    expect(await dispatch(adapter(() => Effect.fail(new ProviderError({ message: "no" }))))).toEqual({
      _tag: "Failure",
      error: { code: "provider_error", message: "no", retryable: false }
    })
    expect(await dispatch(adapter(() => Effect.fail(new RateLimited({ message: "slow", retryAfter: 9 }))))).toEqual({
      _tag: "Failure",
      error: { code: "rate_limited", message: "slow", retryable: true, retryAfter: 9 }
    })
  })

  it("the tool's timeout gives timeout and interrupts the adapter", async () => {
    let interrupted = false
    const slow = adapter(() => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true)))))
    const outcome = await dispatch(slow, 20)
    expect(outcome).toMatchObject({ _tag: "Failure", error: { code: "timeout", retryable: true } })
    expect(interrupted).toBe(true)
  })

  it("an adapter that waits keeps its outcome when it finishes within the timeout", async () => {
    const later = adapter(() => Effect.sleep(5).pipe(Effect.as({ late: true })))
    expect(await dispatch(later, 1000)).toEqual({ _tag: "Success", output: { late: true } })
    const refused = adapter(() => Effect.sleep(5).pipe(Effect.andThen(Effect.fail(new ProviderError({ message: "later no" })))))
    expect(await dispatch(refused, 1000)).toMatchObject({ _tag: "Failure", error: { code: "provider_error", message: "later no" } })
  })

  it("interrupting the dispatch (a cancel) interrupts a waiting adapter", async () => {
    let interrupted = false
    const slow = adapter(() => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => void (interrupted = true)))))
    await Effect.runPromise(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(runAdapter(slow, plan(60_000), context))
      yield* Effect.sleep(5)
      yield* Fiber.interrupt(fiber)
    }))
    expect(interrupted).toBe(true)
  })

  it("a defect or a missing adapter gives provider_unavailable without the defect's text", async () => {
    const dying = await dispatch(adapter(() => Effect.die(new Error("secret stack detail"))))
    expect(dying).toMatchObject({ _tag: "Failure", error: { code: "provider_unavailable", retryable: true } })
    expect(JSON.stringify(dying)).not.toContain("secret stack detail")
    expect(await dispatch(undefined)).toMatchObject({ _tag: "Failure", error: { code: "provider_unavailable" } })
  })
})
