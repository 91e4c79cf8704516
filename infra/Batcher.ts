/**
 * One statement in flight, the rest wait for the next: the shape of every coalescing loop here
 * (the event store's group commit, permit grants and releases, lease statements, endpoint reads,
 * rate-limit takes). Requests that arrive while a batch is being served gather in a queue and
 * are served together by the next one, so under load a round trip carries many requests and
 * when idle a request waits for no timer.
 *
 * `makeBatcher`: callers wait for their answer. `serve` receives the waiting requests and must
 * complete each one's `done`; any it leaves undone is failed with a defect, so a bug in a batch
 * cannot strand its callers. Once the loop's scope closes (its service shut down), waiting and
 * later callers are interrupted at once rather than waiting for an answer that cannot come.
 *
 * `makeSink`: nobody waits (permit releases); `send` only queues its input.
 *
 * `pause` makes a loop rest after each batch, so work that may lag gathers longer.
 */
import { Cause, Deferred, Duration, Effect, Exit, Queue, type Scope } from "effect"

export interface Waiting<I, A, E> {
  readonly input: I
  readonly done: Deferred.Deferred<A, E>
}

interface LoopOptions<T> {
  readonly maxBatch: number
  readonly serve: (batch: ReadonlyArray<T>) => Effect.Effect<void>
  readonly pause?: Duration.Input | undefined
  /** Called with what is still queued when the loop's scope closes. */
  readonly abandon: (items: ReadonlyArray<T>) => void
}

/** The loop over a queue of `T`; answers whether it has stopped and the queue to offer to. */
const startLoop = <T>(options: LoopOptions<T>) =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<T>()
    const pause = options.pause === undefined ? undefined : Duration.fromInputUnsafe(options.pause)
    const serveOne = (batch: ReadonlyArray<T>) =>
      pause === undefined ? options.serve(batch) : Effect.andThen(options.serve(batch), Effect.sleep(pause))
    yield* Effect.forkScoped(Queue.takeBetween(queue, 1, options.maxBatch).pipe(Effect.flatMap(serveOne), Effect.forever))
    const state = { closed: false }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        state.closed = true
        const left: Array<T> = []
        for (let item = Queue.takeUnsafe(queue); item !== undefined && Exit.isSuccess(item); item = Queue.takeUnsafe(queue)) {
          left.push(item.value)
        }
        options.abandon(left)
      })
    )
    return { queue, state }
  })

const stranded = Exit.die(new Error("a batch left a request unanswered"))

/** Starts the loop in the current scope; answers the function that submits one request. */
export const makeBatcher = <I, A, E>(options: {
  readonly maxBatch: number
  readonly serve: (batch: ReadonlyArray<Waiting<I, A, E>>) => Effect.Effect<void>
  readonly pause?: Duration.Input | undefined
}): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const serve = Effect.fnUntraced(function*(batch: ReadonlyArray<Waiting<I, A, E>>) {
      const exit = yield* Effect.exit(options.serve(batch))
      const leftover = Exit.isFailure(exit) ? Exit.die(Cause.squash(exit.cause)) : stranded
      // Completing a done Deferred changes nothing: only the requests `serve` left are answered here.
      for (const waiting of batch) Deferred.doneUnsafe(waiting.done, leftover)
    })
    const { queue, state } = yield* startLoop<Waiting<I, A, E>>({
      maxBatch: options.maxBatch,
      pause: options.pause,
      serve,
      abandon: (left) => left.forEach((waiting) => Deferred.doneUnsafe(waiting.done, Exit.interrupt()))
    })
    return (input: I) =>
      Effect.suspend(() => {
        if (state.closed) return Effect.interrupt
        const done = Deferred.makeUnsafe<A, E>()
        Queue.offerUnsafe(queue, { input, done })
        return Deferred.await(done)
      })
  })

/**
 * A batch served by one call that answers every input in order (`run` fails: every request
 * fails with its error).
 */
export const inOrder = <I, A, E>(run: (inputs: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<A>, E>) =>
  Effect.fnUntraced(function*(batch: ReadonlyArray<Waiting<I, A, E>>) {
    const exit = yield* Effect.exit(run(batch.map((waiting) => waiting.input)))
    if (Exit.isFailure(exit)) {
      const failed = Exit.failCause(exit.cause)
      for (const waiting of batch) Deferred.doneUnsafe(waiting.done, failed)
      return
    }
    batch.forEach((waiting, i) => {
      const answer = exit.value[i]
      Deferred.doneUnsafe(waiting.done, i < exit.value.length ? Exit.succeed(answer as A) : stranded)
    })
  })

/** The loop for work nobody waits for: `send` queues its input; after shutdown it is dropped. */
export const makeSink = <I>(options: {
  readonly maxBatch: number
  readonly serve: (inputs: ReadonlyArray<I>) => Effect.Effect<void>
  readonly pause?: Duration.Input | undefined
}): Effect.Effect<(input: I) => Effect.Effect<void>, never, Scope.Scope> =>
  Effect.map(
    startLoop<I>({ ...options, abandon: () => undefined }),
    ({ queue, state }) => (input: I) =>
      Effect.sync(() => {
        if (!state.closed) Queue.offerUnsafe(queue, input)
      })
  )
