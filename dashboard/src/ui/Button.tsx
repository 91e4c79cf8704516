/**
 * A button that cannot act now (a request in flight, nothing to send yet) says so with
 * `aria-disabled` and ignores the press, but keeps the keyboard focus: a `disabled` button drops
 * it to the page's body, and a list's Refresh is busy at every poll. A submit button's press is
 * cancelled too, which stops its form's submission (Enter in one of the form's fields included).
 *
 * With `why`, the button says beside it why it cannot act now ("Pick at least one event.",
 * "Nothing to save."; "" when it can), in a polite live region that describes it: a greyed
 * button that ignores a press is otherwise left unexplained.
 */
import type { ComponentChildren } from "preact"
import { useId } from "preact/hooks"

export const Button = (
  { enabled, onPress, type = "button", class: className, ariaLabel, why, children }: {
    readonly enabled: boolean
    /** Left out for a submit button: its form's onSubmit acts. */
    readonly onPress?: () => void
    readonly type?: "button" | "submit"
    readonly class?: string | undefined
    readonly ariaLabel?: string | undefined
    /** Why it cannot act ("" when it can); left out where being busy is the only reason. */
    readonly why?: string | undefined
    readonly children: ComponentChildren
  }
) => {
  const whyId = useId()
  const button = (
    <button
      type={type}
      class={className}
      aria-label={ariaLabel}
      aria-disabled={!enabled}
      aria-describedby={why === undefined || why === "" ? undefined : whyId}
      onClick={(event) => {
        if (!enabled) event.preventDefault()
        else onPress?.()
      }}
    >
      {children}
    </button>
  )
  // The live region is there from the start, empty or not, so that a change of reason is said.
  return why === undefined ? button : (
    <>
      {button} <span id={whyId} class="why" aria-live="polite">{why}</span>
    </>
  )
}
