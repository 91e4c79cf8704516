/**
 * The sweeper's schedule on the memory store: start-up drains in 100-row batches, then one
 * batch of at most 100 per interval, and never two sweeps at once.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import { layerSweeper } from "../../infra/FileSweeper.ts"
import { type FileBackend, makeMemoryBackend, makeStagedFiles, StagedFiles } from "../../infra/StagedFiles.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const spied = () => {
  const inner = makeMemoryBackend()
  const results: Array<number> = []
  let running = 0
  let maxRunning = 0
  const backend: FileBackend = {
    ...inner,
    sweep: (now, limit) =>
      Effect.gen(function*() {
        running++
        maxRunning = Math.max(maxRunning, running)
        // A slow sweep: a second one started meanwhile would show as overlap.
        yield* Effect.sleep("20 millis")
        const result = yield* inner.sweep(now, limit)
        results.push(result.deleted)
        running--
        return result
      })
  }
  return { backend, results, maxRunning: () => maxRunning }
}

describe("file sweeper", () => {
  it("drains at start-up in batches of 100, then sweeps at most 100 per interval, one at a time", async () => {
    const spy = spied()
    const files = makeStagedFiles(spy.backend, { maxBytes: 1024, ttlMs: 1 })
    const stage = (n: number) =>
      Effect.runPromise(Effect.forEach(Array.from({ length: n }), (_, i) => files.stage({ projectId: "p", name: `f${i}`, content: "" })))
    await stage(250)
    await sleep(5)
    const runtime = ManagedRuntime.make(layerSweeper({ interval: "300 millis" }).pipe(Layer.provide(Layer.succeed(StagedFiles, files))))
    try {
      await runtime.runPromise(Effect.void)
      await sleep(150)
      expect(spy.results).toEqual([100, 100, 50])
      await stage(150)
      await sleep(400)
      expect(spy.results).toEqual([100, 100, 50, 100])
      await sleep(300)
      expect(spy.results).toEqual([100, 100, 50, 100, 50])
      expect(spy.maxRunning()).toBe(1)
    } finally {
      await runtime.dispose()
    }
  })
})
