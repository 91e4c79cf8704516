/** An ordinary link (it works opened in a new tab) that navigates in place on a plain click. */
import type { ComponentChildren } from "preact"
import { hrefOf, navigate, type Route } from "../router.ts"

export const Link = (
  { to, children, current }: { readonly to: Route; readonly children: ComponentChildren; readonly current?: boolean }
) => (
  <a
    href={hrefOf(to)}
    aria-current={current === true ? "page" : undefined}
    onClick={(event) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
      event.preventDefault()
      navigate(to)
    }}
  >
    {children}
  </a>
)
