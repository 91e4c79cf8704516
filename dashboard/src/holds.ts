/**
 * A stack of holds on an action: while one is held, the latest hold is asked first and lets the
 * action go on (or not). Leaving a view (router.ts) and replacing a secret shown once
 * (ui/LeaveGuard.tsx) are held this way.
 */
export type Ask<Detail> = (proceed: () => void, detail: Detail) => void

/** `Detail` is what the action tells the hold about itself (what it would do to what is held). */
export const makeHolds = <Detail = undefined>(fallback: Detail) => {
  const holds: Array<Ask<Detail>> = []
  return {
    /** Asks `ask` before the action, until the returned release is called. */
    hold: (ask: Ask<Detail>): (() => void) => {
      holds.push(ask)
      return () => {
        const at = holds.indexOf(ask)
        if (at !== -1) holds.splice(at, 1)
      }
    },
    /** Runs `proceed` now, or once the latest hold lets it. */
    when: (proceed: () => void, detail: Detail = fallback): void => {
      const ask = holds[holds.length - 1]
      if (ask === undefined) proceed()
      else ask(proceed, detail)
    },
    held: (): boolean => holds.length > 0
  }
}
