/**
 * The smallest entity that shows the actor guarantees: a counter whose Increment replies with
 * the new value and the pid of the process that owns the entity.
 */
import { Effect, Ref, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { NotFound } from "../../domain/Errors.ts"

/** What the counter says: its value and which process holds it. */
export const CounterReply = Schema.Struct({ value: Schema.Int, pid: Schema.Int })
export type CounterReply = typeof CounterReply.Type

export const Increment = Rpc.make("Increment", {
  payload: { amount: Schema.Int, delayMs: Schema.optional(Schema.Int) },
  success: CounterReply
})

export const Get = Rpc.make("Get", { success: CounterReply })

/** Always fails with a typed (schema) error. */
export const Missing = Rpc.make("Missing", { error: NotFound })

/** Always dies: a bug in a handler. */
export const Crash = Rpc.make("Crash", {})

export const Counter = Entity.make("Counter", [Increment, Get, Missing, Crash])

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
      Get: () => Effect.map(Ref.get(count), (value) => ({ value, pid: process.pid })),
      Missing: () => Effect.fail(new NotFound({ message: "no such thing" })),
      Crash: () => Effect.die(new Error("handler bug"))
    })
  }),
  // Without disableFatalDefects a defect restarts the entity and replays the message forever,
  // and the caller never gets a reply.
  { maxIdleTime: "1 minute", disableFatalDefects: true }
)
