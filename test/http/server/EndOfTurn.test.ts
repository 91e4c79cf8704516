import { Effect, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { endOfTurn } from "../../../http/server/EndOfTurn.ts"

const waiter = (order: Array<string>, name: string) => Effect.andThen(endOfTurn, Effect.sync(() => void order.push(name)))

/** Resolves in the check phase of a turn after the current one's. */
const nextCheckPhase = () => new Promise<void>((resolve) => setImmediate(resolve))

describe("endOfTurn", () => {
  it("holds every waiter of a turn until the check phase, then resumes them together, in order", async () => {
    const order: Array<string> = []
    await Effect.runPromise(Effect.gen(function*() {
      const fibers = yield* Effect.forEach(["a", "b", "c"], (name) =>
        Effect.forkChild(waiter(order, name), { startImmediately: true }))
      order.push("all waiting")
      // Queued behind the waiters' own check-phase callback.
      const after = new Promise<void>((resolve) => setImmediate(() => resolve(void order.push("next callback"))))
      yield* Fiber.joinAll(fibers)
      yield* Effect.promise(() => after)
    }))
    expect(order).toEqual(["all waiting", "a", "b", "c", "next callback"])
  })

  it("does not wait past the turn's I/O: a waiter has resumed by the next check phase", async () => {
    const order: Array<string> = []
    const fiber = Effect.runFork(waiter(order, "resumed"))
    await nextCheckPhase()
    await nextCheckPhase()
    expect(order).toEqual(["resumed"])
    expect(fiber.pollUnsafe()?._tag).toBe("Success")
  })

  it("an interrupted waiter neither resumes nor holds back the others", async () => {
    const order: Array<string> = []
    await Effect.runPromise(Effect.gen(function*() {
      const gone = yield* Effect.forkChild(waiter(order, "interrupted"), { startImmediately: true })
      const kept = yield* Effect.forkChild(waiter(order, "kept"), { startImmediately: true })
      yield* Fiber.interrupt(gone)
      yield* Fiber.join(kept)
    }))
    await nextCheckPhase()
    expect(order).toEqual(["kept"])
  })

  it("each turn's waiters get a check phase of their own", async () => {
    const order: Array<string> = []
    await Effect.runPromise(waiter(order, "first turn"))
    await nextCheckPhase()
    await Effect.runPromise(waiter(order, "later turn"))
    expect(order).toEqual(["first turn", "later turn"])
  })
})
