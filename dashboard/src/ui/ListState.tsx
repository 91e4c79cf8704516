/** The loading, error and empty states of a list, around its rows and its pager. */
import type { ComponentChildren } from "preact"
import type { Paged } from "../data.ts"
import { Empty, ErrorNotice, Loading } from "./Feedback.tsx"
import { Pager } from "./Pager.tsx"

export const ListState = <T,>(
  { paged, what, empty, children }: {
    readonly paged: Paged<T>
    readonly what: string
    readonly empty: ComponentChildren
    readonly children: (items: ReadonlyArray<T>) => ComponentChildren
  }
) => {
  const { value, problem, busy } = paged
  return (
    <div aria-busy={busy}>
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
      {value === undefined ? (problem === undefined ? <Loading what={what} /> : null) : value.items.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        children(value.items)
      )}
      <Pager
        label={what}
        page={paged.page}
        hasNext={value?.nextCursor !== undefined}
        busy={busy}
        onFirst={paged.first}
        onPrevious={paged.previous}
        onNext={paged.next}
      />
    </div>
  )
}
