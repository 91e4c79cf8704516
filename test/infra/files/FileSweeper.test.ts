/**
 * The sweeper's schedule on the memory store: start-up drains in 100-row batches, then one
 * batch of at most 100 per interval, and never two sweeps at once.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import { layerSweeper } from "../../../infra/files/FileSweeper.ts"
import { type FileBackend, makeMemoryBackend, makeStagedFiles, StagedFiles } from "../../../infra/files/StagedFiles.ts"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const spied = () => {
  const inner = makeMemoryBackend()
  const results: Array<number> = []
  const times: Array<number> = []
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
        times.push(performance.now())
        running--
        return result
      })
  }
  return { backend, results, times, maxRunning: () => maxRunning }
}

describe("file sweeper", () => {
  it("drains at start-up in batches of 100, then sweeps at most 100 per interval, one at a time", async () => {
    const spy = spied()
    const files = makeStagedFiles(spy.backend, { maxBytes: 1024, ttlMs: 1, projectMaxBytes: 1024 * 1024 })
    const stage = (n: number) =>
      Effect.runPromise(Effect.forEach(Array.from({ length: n }), (_, i) => files.stage({ projectId: "p", name: `f${i}`, content: "" })))
    await stage(250)
    await sleep(5)
    const interval = 400
    const runtime = ManagedRuntime.make(layerSweeper({ interval: `${interval} millis` }).pipe(Layer.provide(Layer.succeed(StagedFiles, files))))
    const waitFor = async (count: number) => {
      for (let i = 0; i < 200 && spy.results.length < count; i++) await sleep(10)
    }
    try {
      await runtime.runPromise(Effect.void)
      await waitFor(3)
      expect(spy.results).toEqual([100, 100, 50])
      await stage(150)
      await waitFor(4)
      expect(spy.results).toEqual([100, 100, 50, 100])
      await waitFor(5)
      expect(spy.results).toEqual([100, 100, 50, 100, 50])
      // Start-up batches follow each other at once; periodic ones wait an interval in between.
      const gaps = spy.times.slice(1).map((t, i) => t - (spy.times[i] ?? 0))
      expect(Math.max(gaps[0] ?? 0, gaps[1] ?? 0)).toBeLessThan(interval / 2)
      expect(Math.min(gaps[2] ?? 0, gaps[3] ?? 0)).toBeGreaterThanOrEqual(interval)
      expect(spy.maxRunning()).toBe(1)
    } finally {
      await runtime.dispose()
    }
  })
})
