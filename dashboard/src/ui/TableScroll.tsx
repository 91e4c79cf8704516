/**
 * The box a wide table scrolls in on a narrow screen (the page itself does not scroll sideways).
 * It can take the keyboard focus, so a keyboard user can scroll it with the arrow keys, and is a
 * region named after the table (its caption), so a screen reader says what the stop is.
 */
import type { ComponentChildren } from "preact"

export const TableScroll = ({ label, children }: { readonly label: string; readonly children: ComponentChildren }) => (
  <div class="table-scroll" role="region" aria-label={label} tabIndex={0}>
    {children}
  </div>
)
