/**
 * An action that asks first (a delete, a rotate that stops the old secret at once): the button,
 * then a confirmation worded after the action and a way to keep things as they are. The keyboard
 * focus follows (to the confirmation when asked, back to the button when kept or confirmed), and
 * Escape keeps, so neither a keyboard nor a screen-reader user is left on the page's body.
 *
 * Confirming puts the button back before the action runs: a second press cannot repeat it, and
 * what the action shows next (a secret shown once) takes the focus from there.
 */
import { useEffect, useId, useRef, useState } from "preact/hooks"

export const Confirm = (
  { label, confirmLabel, keepLabel, warning, danger = false, onConfirm, startAria, confirmAria, busyLabel }: {
    /** The first button's text ("Delete endpoint", "Rotate secret"). */
    readonly label: string
    /** The confirming button's text ("Confirm delete", "Confirm rotate"). */
    readonly confirmLabel: string
    /** The text of the button that keeps things as they are ("Keep it"). */
    readonly keepLabel: string
    /** What confirming does, said beside the confirmation and read with it. */
    readonly warning?: string
    /** The first button looks dangerous too (a delete); the confirming one always does. */
    readonly danger?: boolean
    readonly onConfirm: () => void
    /** Accessible names where several rows carry the same buttons. */
    readonly startAria?: string
    readonly confirmAria?: string
    /**
     * While the confirmed action is in flight, the first button says so ("Cancelling…") and is
     * `aria-disabled` (ui/Button.tsx): it keeps the focus, and a press neither asks nor acts.
     */
    readonly busyLabel?: string | undefined
  }
) => {
  const [confirming, setConfirming] = useState(false)
  const asked = useRef(false)
  const start = useRef<HTMLButtonElement>(null)
  const confirm = useRef<HTMLButtonElement>(null)
  const warningId = useId()
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
      <button
        ref={confirm}
        type="button"
        class="danger"
        aria-label={confirmAria}
        aria-describedby={warning === undefined ? undefined : warningId}
        onClick={() => {
          choose(false)
          onConfirm()
        }}
      >
        {confirmLabel}
      </button>{" "}
      <button type="button" onClick={() => choose(false)}>{keepLabel}</button>
      {warning === undefined ? null : <span id={warningId} class="confirm-warning">{warning}</span>}
    </span>
  ) : (
    <button
      ref={start}
      type="button"
      class={danger ? "danger" : undefined}
      aria-label={startAria}
      aria-disabled={busyLabel !== undefined}
      onClick={() => {
        if (busyLabel === undefined) choose(true)
      }}
    >
      {busyLabel ?? label}
    </button>
  )
}
