/**
 * The permit queue of one process in front of a store whose grants take time, as on Postgres:
 * a sync try is refused behind async executions that wait, and not behind one whose first grant
 * is still on its way.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { makePermits, memoryPermitStore, type PermitKey, type PermitStore } from "../../../infra/executions/ExecutionPermits.ts"

const key = (executionId: string): PermitKey => ({ projectId: "proj_p", toolkit: "demo", executionId })

/** The memory store, except that grants for `slow` wait until `gate` opens. */
const gatedStore = (slow: string, gate: Deferred.Deferred<void>): PermitStore => {
  const store = memoryPermitStore()
  return {
    ...store,
    tryInsert: (k, cap) => (k.executionId === slow ? Effect.andThen(Deferred.await(gate), store.tryInsert(k, cap)) : store.tryInsert(k, cap))
  }
}

describe("execution permits", () => {
  it.effect("a sync try is not refused while an async grant with room left is on its way", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const permits = makePermits(gatedStore("exe_async", gate), { poll: false })
      const waiting = yield* Effect.forkChild(permits.acquire(key("exe_async"), 2), { startImmediately: true })
      assert.isTrue(yield* permits.tryAcquire(key("exe_sync"), 2))
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(waiting)
      // Both hold now: the cap of 2 is full.
      assert.isFalse(yield* permits.tryAcquire(key("exe_third"), 2))
    }))

  it.effect("a sync try is refused while an async execution waits, even when a permit was freed elsewhere", () =>
    Effect.gen(function*() {
      const store = memoryPermitStore()
      const permits = makePermits(store, { poll: false })
      assert.isTrue(yield* permits.tryAcquire(key("exe_first"), 1))
      const waiting = yield* Effect.forkChild(permits.acquire(key("exe_async"), 1), { startImmediately: true })
      // Freed in the store without a local release (another process's view of it): nobody is woken.
      yield* store.remove(key("exe_first"))
      assert.isFalse(yield* permits.tryAcquire(key("exe_sync"), 1))
      yield* permits.release(key("exe_first"))
      yield* Fiber.join(waiting)
      assert.isFalse(yield* permits.tryAcquire(key("exe_sync"), 1))
      yield* permits.release(key("exe_async"))
      assert.isTrue(yield* permits.tryAcquire(key("exe_sync"), 1))
    }))
})
