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
import { holdLeaving } from "../router.ts"

const replacing = makeHolds()

/** Runs `proceed` (an action that shows a new secret once), after asking if one is shown and not put away. */
export const whenReplacing = replacing.when

export const useLeaveGuard = ({ what, onStay }: {
  /** What leaving loses, as said in a sentence ("signing secret", "ingest URL"). */
  readonly what: string
  readonly onStay: () => void
}): VNode | null => {
  const [leave, setLeave] = useState<{ readonly proceed: () => void; readonly replace: boolean } | undefined>(undefined)
  // Held as the secret is drawn, not a frame later (an effect's time): there is no moment when
  // it shows and leaving does not ask.
  useLayoutEffect(() => {
    const unload = (event: BeforeUnloadEvent) => {
      event.preventDefault()
      // Browsers before the standard's preventDefault() ask only when returnValue is set.
      event.returnValue = ""
    }
    window.addEventListener("beforeunload", unload)
    const release = holdLeaving((proceed) => setLeave({ proceed, replace: false }))
    const releaseReplacing = replacing.hold((proceed) => setLeave({ proceed, replace: true }))
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
      replace={leave.replace}
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

/** A modal dialog (the rest of the page inert), asked as an alert: its question and what leaving (or replacing) loses. */
const LeaveDialog = (
  { what, replace, onStay, onLeave }: {
    readonly what: string
    readonly replace: boolean
    readonly onStay: () => void
    readonly onLeave: () => void
  }
) => {
  const dialog = useRef<HTMLDialogElement>(null)
  const stay = useRef<HTMLButtonElement>(null)
  const answered = useRef(false)
  const id = useId()
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
      <h2 id={`${id}-title`}>{replace ? `Replace the ${what}?` : "Leave this page?"}</h2>
      <p id={`${id}-said`}>
        The {what} on this page is shown once: it will not be shown again, and {replace ? "a new one replaces it and loses it" : "leaving the page loses it"}.
        Stay to copy and store it first.
      </p>
      <div class="actions">
        <button ref={stay} type="button" onClick={() => answer(onStay)}>{replace ? `Stay and keep the ${what}` : "Stay on this page"}</button>
        <button type="button" class="danger" onClick={() => answer(onLeave)}>{replace ? "Replace" : "Leave"} and lose the {what}</button>
      </div>
    </dialog>
  )
}
