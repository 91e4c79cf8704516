/**
 * A delete that asks first: the button, then "Confirm delete" and a way to keep the thing. The
 * keyboard focus follows (to the confirmation when asked, back to the button when kept), and
 * Escape keeps it, so neither a keyboard nor a screen-reader user is left on the page's body.
 */
import { useEffect, useRef, useState } from "preact/hooks"

export const ConfirmDelete = (
  { label, keepLabel, onConfirm, deleteAria, confirmAria }: {
    /** The first button's text ("Delete endpoint"). */
    readonly label: string
    /** The text of the button that keeps it ("Keep it"). */
    readonly keepLabel: string
    readonly onConfirm: () => void
    /** Accessible names where several rows carry the same buttons. */
    readonly deleteAria?: string
    readonly confirmAria?: string
  }
) => {
  const [confirming, setConfirming] = useState(false)
  const asked = useRef(false)
  const start = useRef<HTMLButtonElement>(null)
  const confirm = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    // Not on the first render: only a change the user made moves the focus.
    if (!asked.current) return
    ;(confirming ? confirm : start).current?.focus()
  }, [confirming])
  const choose = (next: boolean) => {
    asked.current = true
    setConfirming(next)
  }
  return confirming ? (
    <span
      class="confirm"
      onKeyDown={(event) => {
        if (event.key === "Escape") choose(false)
      }}
    >
      <button ref={confirm} type="button" class="danger" aria-label={confirmAria} onClick={onConfirm}>Confirm delete</button>{" "}
      <button type="button" onClick={() => choose(false)}>{keepLabel}</button>
    </span>
  ) : (
    <button ref={start} type="button" class="danger" aria-label={deleteAria} onClick={() => choose(true)}>{label}</button>
  )
}
