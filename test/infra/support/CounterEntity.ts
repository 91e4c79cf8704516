/**
 * The smallest entity that shows the actor guarantees: a counter whose Increment replies with
 * the new value and the pid of the process that owns the entity.
 */
import { Effect, Ref, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/** What the counter says: its value and which process holds it. */
export const CounterReply = Schema.Struct({ value: Schema.Int, pid: Schema.Int })
export type CounterReply = typeof CounterReply.Type

export const Increment = Rpc.make("Increment", {
  payload: { amount: Schema.Int, delayMs: Schema.optional(Schema.Int) },
  success: CounterReply
})

export const Get = Rpc.make("Get", { success: CounterReply })

export const Counter = Entity.make("Counter", [Increment, Get])

export const CounterLive = Counter.toLayer(
  Effect.gen(function*() {
    const count = yield* Ref.make(0)
    return Counter.of({
      // Read, wait, write: interleaved handlers would lose increments, so a run of distinct
      // results proves one message at a time.
      Increment: ({ payload }) =>
        Effect.gen(function*() {
          const before = yield* Ref.get(count)
          if (payload.delayMs !== undefined && payload.delayMs > 0) yield* Effect.sleep(payload.delayMs)
          else yield* Effect.yieldNow
          yield* Ref.set(count, before + payload.amount)
          return { value: before + payload.amount, pid: process.pid }
        }),
      Get: () => Effect.map(Ref.get(count), (value) => ({ value, pid: process.pid }))
    })
  }),
  { maxIdleTime: "1 minute" }
)
