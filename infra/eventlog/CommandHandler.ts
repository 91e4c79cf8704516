/**
 * The one command handler of every actor (style.md, "Events, commands, errors"): fold the
 * stream, decide, append with the expected version, and on a lost race start over from a fresh
 * fold. A decider is pure (domain/); this is the only place that runs one against the log.
 *
 * `alongside` adds appends that must commit atomically with the decision (another stream's
 * decision, prepared with `prepare`, such as an idempotency claim or a project's registry of
 * endpoints): a race on any of them starts the whole command over. `known` skips the first fold
 * when the caller already holds the state at a version (the execution actor's cache); a lost
 * race drops it.
 */
import { Effect } from "effect"
import type { StreamCodec } from "../../domain/EventCodec.ts"
import { newId } from "../Ids.ts"
import { type AppendRequest, ConcurrencyConflict, type EventStoreShape, type RecordedEvent, type StoreUnavailable } from "./EventStore.ts"

export interface Decider<Command, Event extends { readonly type: string }, State, Rejection> {
  readonly streamType: string
  readonly codec: StreamCodec<Event>
  readonly initialState: State
  readonly evolve: (state: State, event: Event) => State
  /** The events the command makes, or why it is refused. */
  readonly decide: (command: Command, state: State) => ReadonlyArray<Event> | Rejection
}

export interface Prepared<Event, State> {
  /** The state before the decision, and its stream version. */
  readonly before: State
  readonly version: number
  readonly events: ReadonlyArray<Event>
  readonly after: State
  /** The append that records the decision (empty events when it decided nothing). */
  readonly request: AppendRequest
}

/** Times a command starts over after lost races before the handler gives up with a defect. */
const MAX_RACES = 8

const isEvents = <Event>(decision: ReadonlyArray<Event> | unknown): decision is ReadonlyArray<Event> => Array.isArray(decision)

/** Folds, decides and prepares the append, without appending (for `alongside`). */
export const prepare = Effect.fnUntraced(function*<C, E extends { readonly type: string }, S, R>(
  store: EventStoreShape,
  decider: Decider<C, E, S, R>,
  streamId: string,
  command: C,
  known?: { readonly state: S; readonly version: number } | undefined
): Effect.fn.Return<Prepared<E, S>, R | StoreUnavailable> {
  let before = decider.initialState
  let version = 0
  if (known !== undefined) {
    before = known.state
    version = known.version
  } else {
    const recorded: ReadonlyArray<RecordedEvent> = yield* store.readStream(streamId)
    for (const event of recorded) before = decider.evolve(before, decider.codec.decode(event))
    version = recorded.length
  }
  const decision = decider.decide(command, before)
  if (!isEvents<E>(decision)) return yield* Effect.fail(decision)
  const after = decision.reduce(decider.evolve, before)
  return {
    before,
    version,
    events: decision,
    after,
    request: {
      streamId,
      streamType: decider.streamType,
      expectedVersion: version,
      events: decision.map((event) => decider.codec.encode(event, newId("evt")))
    }
  }
})

export interface HandleOptions<S, A, RA> {
  readonly known?: { readonly state: S; readonly version: number } | undefined
  readonly alongside?: Effect.Effect<ReadonlyArray<AppendRequest>, A | StoreUnavailable, RA> | undefined
}

/** Runs `command` against the stream: its decision is appended (with `alongside`) or refused. */
export const handleCommand = <C, E extends { readonly type: string }, S, R, A = never, RA = never>(
  store: EventStoreShape,
  decider: Decider<C, E, S, R>,
  streamId: string,
  command: C,
  options: HandleOptions<S, A, RA> = {}
): Effect.Effect<Prepared<E, S>, R | A | StoreUnavailable, RA> => {
  const attempt = (races: number, known: HandleOptions<S, A, RA>["known"]): Effect.Effect<Prepared<E, S>, R | A | StoreUnavailable, RA> =>
    Effect.gen(function*() {
      const prepared = yield* prepare(store, decider, streamId, command, known)
      const extra = options.alongside === undefined ? [] : yield* options.alongside
      const requests = prepared.events.length === 0 ? extra : [...extra, prepared.request]
      if (requests.length > 0) yield* store.append(requests)
      return prepared
    }).pipe(
      Effect.catchIf(
        (error): error is ConcurrencyConflict => error instanceof ConcurrencyConflict,
        (conflict) => (races < MAX_RACES ? attempt(races + 1, undefined) : Effect.die(conflict))
      )
    )
  return attempt(0, options.known)
}
