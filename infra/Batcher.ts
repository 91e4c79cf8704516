/**
 * One statement in flight, the rest wait for the next: the shape of every coalescing loop here
 * (the event store's group commit, permit grants and releases, lease statements, endpoint reads,
 * rate-limit takes). Requests that arrive while a batch is being served gather in a queue and
 * are served together by the next one, so under load a round trip carries many requests and
 * when idle a request waits for no timer.
 *
 * `serve` receives the waiting requests and must complete each one's `done`; any it leaves
 * undone is failed with a defect, so a bug in a batch cannot strand its callers. `pause` makes
 * the loop rest after each batch (work that may lag, such as releases, gathers longer).
 */
import { Cause, Deferred, Duration, Effect, Exit, Queue, type Scope } from "effect"

export interface Waiting<I, A, E> {
  readonly input: I
  readonly done: Deferred.Deferred<A, E>
}

export interface BatcherOptions<I, A, E> {
  readonly maxBatch: number
  readonly serve: (batch: ReadonlyArray<Waiting<I, A, E>>) => Effect.Effect<void>
  readonly pause?: Duration.Input | undefined
}

const stranded = Exit.die(new Error("a batch left a request unanswered"))

/** Starts the loop in the current scope; answers the function that submits one request. */
export const makeBatcher = <I, A, E>(options: BatcherOptions<I, A, E>): Effect.Effect<(input: I) => Effect.Effect<A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Waiting<I, A, E>>()
    const pause = options.pause === undefined ? undefined : Duration.fromInputUnsafe(options.pause)
    const serveOne = Effect.fnUntraced(function*(batch: ReadonlyArray<Waiting<I, A, E>>) {
      const exit = yield* Effect.exit(options.serve(batch))
      const leftover = Exit.isFailure(exit) ? Exit.die(Cause.squash(exit.cause)) : stranded
      // Completing a done Deferred changes nothing: only the requests `serve` left are answered here.
    for (const waiting of batch) Deferred.doneUnsafe(waiting.done, leftover)
      if (pause !== undefined) yield* Effect.sleep(pause)
    })
    yield* Effect.forkScoped(Queue.takeBetween(queue, 1, options.maxBatch).pipe(Effect.flatMap(serveOne), Effect.forever))
    // Once the loop is gone (its service shut down), nothing answers: waiters and late callers
    // are interrupted at once instead of waiting forever (a finalizer elsewhere may still ask).
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        let waiting = Queue.takeUnsafe(queue)
        while (waiting !== undefined && Exit.isSuccess(waiting)) {
          Deferred.doneUnsafe(waiting.value.done, Exit.interrupt())
          waiting = Queue.takeUnsafe(queue)
        }
      })
    )
    return (input: I) =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
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
