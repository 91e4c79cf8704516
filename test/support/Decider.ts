/**
 * Given/when/then for deciders, one helper for every actor (after emmett's
 * `DeciderSpecification`): the events a stream already holds, a command, then the events the
 * command must produce, or its refusal. A decider here answers events as an array and a refusal
 * as anything else (an error instance, a tagged object), so the helper needs no adapter per actor.
 *
 *   const given = deciderSpecification({ decide, evolve, initialState })
 *   given([requested]).when({ _tag: "CancelExecution", now }).then([cancelled])
 *   given([]).when({ _tag: "CancelExecution", now }).thenFails(StateConflict)
 *
 * `then` and `thenNothingHappened` answer the state after the events, for assertions on what the
 * events make of the state; `then` also takes a function, for events checked by parts.
 */
import { expect } from "vitest"

export interface Decider<Command, State, Event, Rejection> {
  readonly decide: (command: Command, state: State) => ReadonlyArray<Event> | Rejection
  readonly evolve: (state: State, event: Event) => State
  readonly initialState: State
}

export interface Then<State, Event, Rejection> {
  /** The command produces exactly `expected`, or events that pass `check`; answers the state after them. */
  readonly then: (expected: ReadonlyArray<Event> | ((events: ReadonlyArray<Event>, after: State) => void)) => State
  /** The command is accepted and produces no event; answers the (unchanged) state. */
  readonly thenNothingHappened: () => State
  /**
   * The command is refused: with an instance of `expected` when it is a class, else with a
   * refusal equal to it; answers the refusal.
   */
  readonly thenFails: (expected?: Rejection | (abstract new(...args: never) => Rejection)) => Rejection
}

const isEvents = <Event, Rejection>(result: ReadonlyArray<Event> | Rejection): result is ReadonlyArray<Event> =>
  Array.isArray(result)

export const deciderSpecification = <Command, State, Event, Rejection = never>(
  decider: Decider<Command, State, Event, Rejection>
) =>
(given: ReadonlyArray<Event>) => ({
  when: (command: Command): Then<State, Event, Rejection> => {
    const state = given.reduce(decider.evolve, decider.initialState)
    const result = decider.decide(command, state)
    const accepted = (): ReadonlyArray<Event> => {
      if (!isEvents(result)) return expect.fail(`expected the command to be accepted; it was refused with ${JSON.stringify(result)}`)
      return result
    }
    return {
      // The name is emmett's; nothing awaits these objects.
      // oxlint-disable-next-line unicorn/no-thenable
      then: (expected) => {
        const events = accepted()
        const after = events.reduce(decider.evolve, state)
        if (typeof expected === "function") expected(events, after)
        else expect(events).toEqual(expected)
        return after
      },
      thenNothingHappened: () => {
        expect(accepted()).toEqual([])
        return state
      },
      thenFails: (expected) => {
        if (isEvents(result)) return expect.fail(`expected the command to be refused; it produced ${JSON.stringify(result)}`)
        if (typeof expected === "function") expect(result).toBeInstanceOf(expected)
        else if (expected !== undefined) expect(result).toEqual(expected)
        return result
      }
    }
  }
})
