/**
 * What leaving the page would lose for good (a secret shown once, SecretOnce.tsx) keeps the way
 * out while its component is on the page: leaving the dashboard (a reload, closing the tab,
 * another address) raises the browser's own prompt (`beforeunload`), and leaving the view inside
 * it (a link, Back or Forward, signing out: router.ts `whenLeaving`) asks first in a dialog of
 * the page, saying what would be lost. "Stay" has the focus and Escape stays; staying puts the
 * focus back on what was kept (`onStay`), leaving goes on. Once the component goes (the secret
 * put away), nothing asks.
 *
 * An action of the view that would replace the secret with another (a second creation, a
 * rotation: whenReplacing) asks the same way first, and goes on only if the user lets it go.
 */
import type { VNode } from "preact"
import { useEffect, useId, useLayoutEffect, useRef, useState } from "preact/hooks"
import { makeHolds } from "../holds.ts"
import { holdLeaving, type Leaving } from "../router.ts"

/**
 * What an action does to the secret shown: `replace` shows a new one in its place (a second
 * creation, a rotation); `remove` takes it off the page with nothing in its place (a creation
 * that shows no secret: a polling subscription has no ingest URL).
 */
export type Replacing = "replace" | "remove"

const replacing = makeHolds<Replacing>("replace")

/** Runs `proceed` (an action that would take the secret shown once off the page), after asking if one is shown and not put away. */
export const whenReplacing = replacing.when

type Asked = Leaving | Replacing

export const useLeaveGuard = ({ what, onStay }: {
  /** What leaving loses, as said in a sentence ("signing secret", "ingest URL"). */
  readonly what: string
  readonly onStay: () => void
}): VNode | null => {
  const [leave, setLeave] = useState<{ readonly proceed: () => void; readonly asked: Asked } | undefined>(undefined)
  // Held as the secret is drawn, not a frame later (an effect's time): there is no moment when
  // it shows and leaving does not ask.
  useLayoutEffect(() => {
    const unload = (event: BeforeUnloadEvent) => {
      event.preventDefault()
      // Browsers before the standard's preventDefault() ask only when returnValue is set.
      event.returnValue = ""
    }
    window.addEventListener("beforeunload", unload)
    const release = holdLeaving((proceed, asked) => setLeave({ proceed, asked }))
    const releaseReplacing = replacing.hold((proceed, asked) => setLeave({ proceed, asked }))
    return () => {
      release()
      releaseReplacing()
      window.removeEventListener("beforeunload", unload)
    }
  }, [])
  if (leave === undefined) return null
  return (
    <LeaveDialog
      what={what}
      asked={leave.asked}
      onStay={() => {
        setLeave(undefined)
        onStay()
      }}
      onLeave={() => {
        setLeave(undefined)
        leave.proceed()
      }}
    />
  )
}

/** What the dialog says for each question: its title, why, how the secret is lost, and the two answers. */
const WORDING: Record<Asked, (what: string) => {
  readonly title: string
  readonly why?: string
  readonly loses: string
  readonly stay: string
  readonly go: string
}> = {
  leave: (what) => ({ title: "Leave this page?", loses: "leaving the page loses it", stay: "Stay on this page", go: `Leave and lose the ${what}` }),
  refused: (what) => ({
    title: "The service refused the key",
    why: "The key was revoked, or the service no longer knows it, so the dashboard signs out.",
    loses: "signing out loses it",
    stay: `Stay and keep the ${what}`,
    go: `Sign out and lose the ${what}`
  }),
  replace: (what) => ({ title: `Replace the ${what}?`, loses: "a new one replaces it and loses it", stay: `Stay and keep the ${what}`, go: `Replace and lose the ${what}` }),
  remove: (what) => ({ title: `Put away the ${what}?`, loses: "going on takes it off the page and loses it", stay: `Stay and keep the ${what}`, go: `Go on and lose the ${what}` })
}

/** A modal dialog (the rest of the page inert), asked as an alert: its question and what leaving (or replacing) loses. */
const LeaveDialog = (
  { what, asked, onStay, onLeave }: {
    readonly what: string
    readonly asked: Asked
    readonly onStay: () => void
    readonly onLeave: () => void
  }
) => {
  const dialog = useRef<HTMLDialogElement>(null)
  const stay = useRef<HTMLButtonElement>(null)
  const answered = useRef(false)
  const id = useId()
  const wording = WORDING[asked](what)
  useEffect(() => {
    dialog.current?.showModal()
    stay.current?.focus()
  }, [])
  /** Closes the dialog first (the page is no longer inert, so the focus can move), then answers once. */
  const answer = (then: () => void) => {
    if (answered.current) return
    answered.current = true
    dialog.current?.close()
    then()
  }
  return (
    <dialog
      ref={dialog}
      class="leave"
      role="alertdialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-said`}
      onCancel={(event) => {
        // Escape: stay, and say so through the same way as the button.
        event.preventDefault()
        answer(onStay)
      }}
      onClose={() => answer(onStay)}
    >
      <h2 id={`${id}-title`}>{wording.title}</h2>
      <p id={`${id}-said`}>
        {wording.why === undefined ? "" : `${wording.why} `}The {what} on this page is shown once: it will not be shown again, and {wording.loses}.
        Stay to copy and store it first.
      </p>
      <div class="actions">
        <button ref={stay} type="button" onClick={() => answer(onStay)}>{wording.stay}</button>
        <button type="button" class="danger" onClick={() => answer(onLeave)}>{wording.go}</button>
      </div>
    </dialog>
  )
}
