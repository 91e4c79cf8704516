/**
 * The loading, error and empty states of a list, around its rows and its pager.
 *
 * While another page of the list loads, the rows shown stay, dimmed, and the list is
 * `aria-busy`: the page keeps its length, so a pager button pressed below a screenful of rows
 * keeps the keyboard focus where it is. Once the new page is shown (or its error), a focus inside
 * the list (its pager) is scrolled into view if the new rows moved it off the screen (WCAG 2.4.11).
 */
import type { ComponentChildren } from "preact"
import { useLayoutEffect, useRef } from "preact/hooks"
import type { Paged } from "../data.ts"
import { Empty, ErrorNotice, Loading } from "./Feedback.tsx"
import { Pager } from "./Pager.tsx"

/** After a change of page, once it is shown: the focus inside `list` back on the screen. */
const useFocusShownAfterPaging = <T,>(paged: Paged<T>) => {
  const list = useRef<HTMLDivElement>(null)
  const page = useRef(paged.page)
  const moved = useRef(false)
  if (page.current !== paged.page) {
    page.current = paged.page
    moved.current = true
  }
  const arrived = !paged.stale && (paged.value !== undefined || paged.problem !== undefined)
  useLayoutEffect(() => {
    if (!moved.current || !arrived) return
    moved.current = false
    const focused = document.activeElement
    if (focused instanceof HTMLElement && list.current?.contains(focused) === true) focused.scrollIntoView({ block: "nearest" })
  }, [arrived, paged.value, paged.problem])
  return list
}

export const ListState = <T,>(
  { paged, what, empty, children }: {
    readonly paged: Paged<T>
    readonly what: string
    readonly empty: ComponentChildren
    readonly children: (items: ReadonlyArray<T>) => ComponentChildren
  }
) => {
  const { value, problem, busy } = paged
  const list = useFocusShownAfterPaging(paged)
  return (
    <div ref={list} aria-busy={busy}>
      {problem === undefined ? null : (
        <ErrorNotice
          problem={problem}
          action={
            <p>
              <button type="button" onClick={paged.page > 0 ? paged.first : paged.reload}>
                {paged.page > 0 ? "Start again from the first page" : "Try again"}
              </button>
            </p>
          }
        />
      )}
      {/* Always this box, stale or not, so the rows are not made anew (a focus in them stays). */}
      <div class={paged.stale ? "list-rows stale" : "list-rows"}>
        {value === undefined ? (problem === undefined ? <Loading what={what} /> : null) : value.items.length === 0 ? (
          <Empty>{empty}</Empty>
        ) : (
          children(value.items)
        )}
      </div>
      <Pager
        label={what}
        page={paged.page}
        // While another page loads the pager stays, its buttons waiting (busy), even when the
        // page kept has no next one ("First page" from the last): the focus stays on its button.
        hasNext={paged.stale || value?.nextCursor !== undefined}
        busy={busy}
        onFirst={paged.first}
        onPrevious={paged.previous}
        onNext={paged.next}
      />
    </div>
  )
}
