/** Cursor paging: forward by the page's nextCursor, back through the cursors already followed. */
export const Pager = (
  { label, page, hasNext, onFirst, onPrevious, onNext, busy }: {
    readonly label: string
    readonly page: number
    readonly hasNext: boolean
    readonly onFirst: () => void
    readonly onPrevious: () => void
    readonly onNext: () => void
    readonly busy: boolean
  }
) =>
  page === 0 && !hasNext ? null : (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={onFirst} disabled={page === 0 || busy}>First page</button>
      <button type="button" onClick={onPrevious} disabled={page === 0 || busy}>Previous page</button>
      <span class="muted">Page {page + 1}</span>
      <button type="button" onClick={onNext} disabled={!hasNext || busy}>Next page</button>
    </nav>
  )
