/**
 * The shared reader of the log's tail (infra/eventlog/SharedFeed.ts), over a log in an array:
 * every follower sees exactly the feed from where it began, however its position meets the
 * window; followers at the tail share one read per change; a failed read fails those waiting
 * on it and nothing after.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import type { Position, RecordedEvent } from "../../../infra/eventlog/EventStore.ts"
import { StoreUnavailable } from "../../../infra/eventlog/EventStore.ts"
import { Wakeup } from "../../../infra/eventlog/MemoryEventStore.ts"
import { makeSharedFeed } from "../../../infra/eventlog/SharedFeed.ts"

const at = (n: number): Position => ({ tx: BigInt(n), seq: BigInt(n) })

/** A log in an array: position n is the nth event; `reads` counts the statements a database would run. */
const makeLog = () => {
  const events: Array<RecordedEvent> = []
  const signal = new Wakeup("1 second")
  const state = { reads: 0, failNext: false }
  const append = (count: number) => {
    for (let i = 0; i < count; i++) {
      const n = events.length + 1
      events.push({ streamId: `s-${n}`, streamType: "test", version: 1, position: at(n), eventId: `evt_${n}`, type: "Thing", schemaVersion: 1, data: { n }, metadata: {}, createdAt: 0 })
    }
    signal.notify()
  }
  const readAll = (after: Position, limit: number) =>
    Effect.suspend(() => {
      state.reads++
      if (state.failNext) {
        state.failNext = false
        return Effect.fail(new StoreUnavailable({ cause: new Error("connection lost") }))
      }
      return Effect.succeed(events.filter((event) => event.position.seq > after.seq).slice(0, limit))
    })
  return { events, signal, state, append, readAll }
}

const sequence = (events: ReadonlyArray<RecordedEvent>) => events.map((event) => Number(event.position.seq))
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Follows in the background, recording each event's number in `into`. */
const recording = (events: Stream.Stream<RecordedEvent, StoreUnavailable>, into: Array<number>) =>
  Effect.forkChild(Stream.runForEach(events, (event) => Effect.sync(() => void into.push(Number(event.position.seq)))))

/** The first `count` events of a follow. */
const firstOf = (events: Stream.Stream<RecordedEvent, StoreUnavailable>, count = 1) => Stream.runCollect(Stream.take(events, count))

/** Waits until `done` holds, giving the followers' fibers turns meanwhile. */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 2_000 && !done(); i++) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1)))
    assert.isTrue(done(), `condition not reached ${String(done)}`)
  })

describe("SharedFeed", () => {
  it.live("gives each follower the feed from its own start, old events and new ones, in order", () =>
    Effect.gen(function*() {
      const log = makeLog()
      log.append(30)
      const feed = yield* makeSharedFeed(log.readAll, log.signal, { keep: 8, batchSize: 5 })
      const starts = [0, 12, 30]
      const seen = starts.map(() => [] as Array<number>)
      const fibers = yield* Effect.forEach(starts, (start, i) =>
        recording(feed.follow(at(start), 7), seen[i]!))
      for (let round = 0; round < 10; round++) {
        log.append(round % 3 === 0 ? 25 : 3)
        yield* until(() => seen.every((numbers) => numbers.at(-1) === log.events.length))
      }
      starts.forEach((start, i) => assert.deepStrictEqual(seen[i], range(start + 1, log.events.length)))
      yield* Effect.forEach(fibers, Fiber.interrupt)
    }).pipe(Effect.scoped))

  it.live("shares one read per change among the followers at the tail", () =>
    Effect.gen(function*() {
      const log = makeLog()
      log.append(5)
      const feed = yield* makeSharedFeed(log.readAll, log.signal, { keep: 100, batchSize: 100 })
      const followers = 6
      const seen = Array.from({ length: followers }, () => [] as Array<number>)
      const fibers = yield* Effect.forEach(seen, (numbers) =>
        recording(feed.follow(at(5), 100), numbers))
      // Settled at the tail: every follower waits for the next change.
      yield* Effect.sleep("50 millis")
      const before = log.state.reads
      const rounds = 20
      for (let round = 0; round < rounds; round++) {
        log.append(2)
        yield* until(() => seen.every((numbers) => numbers.at(-1) === log.events.length))
      }
      // Each change costs one read, whatever the number of followers (each polling alone, that
      // was two per follower: one that found the change and one that found nothing more).
      assert.isAtMost(log.state.reads - before, rounds + 2)
      seen.forEach((numbers) => assert.deepStrictEqual(numbers, range(6, log.events.length)))
      yield* Effect.forEach(fibers, Fiber.interrupt)
    }).pipe(Effect.scoped))

  it.live("hands a follower that fell behind the window the events it missed, read directly", () =>
    Effect.gen(function*() {
      const log = makeLog()
      const feed = yield* makeSharedFeed(log.readAll, log.signal, { keep: 4, batchSize: 3 })
      const fast: Array<number> = []
      const fastFiber = yield* recording(feed.follow(at(0), 3), fast)
      log.append(1)
      yield* until(() => fast.length === 1)
      // A follower that takes one event and then stops for a while.
      const slow = yield* firstOf(feed.follow(at(0), 2))
      for (let round = 0; round < 10; round++) {
        log.append(5)
        yield* until(() => fast.at(-1) === log.events.length)
      }
      const rest = yield* firstOf(feed.follow(slow[0]!.position, 2), log.events.length - 1)
      assert.deepStrictEqual([...sequence(slow), ...sequence(rest)], range(1, log.events.length))
      assert.deepStrictEqual(fast, range(1, log.events.length))
      yield* Fiber.interrupt(fastFiber)
    }).pipe(Effect.scoped))

  it.live("does not spin for a follower behind a window that starts where no event is", () =>
    Effect.gen(function*() {
      const log = makeLog()
      log.append(3)
      const feed = yield* makeSharedFeed(log.readAll, log.signal, { keep: 10, batchSize: 10 })
      // A follower from a position past the last event (a checkpoint no event holds) opens the window there.
      const ahead = yield* Effect.forkChild(firstOf(feed.follow(at(7), 10)))
      yield* Effect.sleep("20 millis")
      const behind = yield* Effect.forkChild(firstOf(feed.follow(at(3), 10)))
      yield* Effect.sleep("100 millis")
      // Waiting, not reading in a loop.
      assert.isAtMost(log.state.reads, 6)
      log.append(5)
      assert.deepStrictEqual(sequence(yield* Fiber.join(behind)), [4])
      assert.deepStrictEqual(sequence(yield* Fiber.join(ahead)), [8])
    }).pipe(Effect.scoped))

  it.live("fails the followers waiting on a read that failed, and serves the next follow", () =>
    Effect.gen(function*() {
      const log = makeLog()
      log.append(2)
      const feed = yield* makeSharedFeed(log.readAll, log.signal, { keep: 10, batchSize: 10 })
      const waiting = yield* Effect.forkChild(firstOf(feed.follow(at(2), 10)))
      yield* until(() => log.state.reads >= 2)
      log.state.failNext = true
      log.append(1)
      const failed = yield* Fiber.await(waiting)
      assert.isTrue(failed._tag === "Failure")
      const again = yield* firstOf(feed.follow(at(2), 10))
      assert.deepStrictEqual(sequence(again), [3])
    }).pipe(Effect.scoped))
})
