/** Where the keyboard focus is, for views whose rows can leave the list while focused. */

/** Whether the keyboard focus is inside `element` (read while rendering: before the render takes out what had it). */
export const focusIn = (element: HTMLElement | null): boolean => element !== null && element.contains(document.activeElement)

/** The focus fell to the page's body: what had it was taken out. */
export const focusLost = (): boolean => document.activeElement === null || document.activeElement === document.body
