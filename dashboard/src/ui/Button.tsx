/**
 * A button that cannot act now (a request in flight, nothing to send yet) says so with
 * `aria-disabled` and ignores the press, but keeps the keyboard focus: a `disabled` button drops
 * it to the page's body, and a list's Refresh is busy at every poll. A submit button's press is
 * cancelled too, which stops its form's submission (Enter in one of the form's fields included).
 */
import type { ComponentChildren } from "preact"

export const Button = (
  { enabled, onPress, type = "button", class: className, ariaLabel, children }: {
    readonly enabled: boolean
    /** Left out for a submit button: its form's onSubmit acts. */
    readonly onPress?: () => void
    readonly type?: "button" | "submit"
    readonly class?: string | undefined
    readonly ariaLabel?: string | undefined
    readonly children: ComponentChildren
  }
) => (
  <button
    type={type}
    class={className}
    aria-label={ariaLabel}
    aria-disabled={!enabled}
    onClick={(event) => {
      if (!enabled) event.preventDefault()
      else onPress?.()
    }}
  >
    {children}
  </button>
)
