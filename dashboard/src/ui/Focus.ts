/** Where the keyboard focus is, for views whose rows can leave the list while focused. */
import { useEffect, useRef } from "preact/hooks"

/** Whether the keyboard focus is inside `element` (read while rendering: before the render takes out what had it). */
export const focusIn = (element: HTMLElement | null): boolean => element !== null && element.contains(document.activeElement)

/** The focus fell to the page's body: what had it was taken out. */
export const focusLost = (): boolean => document.activeElement === null || document.activeElement === document.body

/**
 * For a list whose focused row can leave it (a cancel, a resend that shows another page): when
 * the focus was inside `section` before a render of `value` and fell to the body after it, the
 * list's heading (give it `tabIndex={-1}`) takes it, rather than leaving the keyboard at the top.
 */
export const useFocusKept = (value: unknown) => {
  const section = useRef<HTMLElement>(null)
  const heading = useRef<HTMLHeadingElement>(null)
  const hadFocus = focusIn(section.current)
  useEffect(() => {
    if (hadFocus && focusLost()) heading.current?.focus()
  }, [value])
  return { section, heading }
}
