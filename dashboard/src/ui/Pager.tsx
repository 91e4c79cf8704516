/**
 * Cursor paging: forward by the page's nextCursor, back through the cursors already followed.
 * A button that cannot act now says so with `aria-disabled` and ignores the press, but keeps the
 * keyboard focus: a `disabled` button drops it to the page's body while the next page loads.
 */
const PagerButton = ({ label, enabled, onPress }: { readonly label: string; readonly enabled: boolean; readonly onPress: () => void }) => (
  <button type="button" aria-disabled={!enabled} onClick={() => (enabled ? onPress() : undefined)}>{label}</button>
)

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
      <PagerButton label="First page" enabled={page > 0 && !busy} onPress={onFirst} />
      <PagerButton label="Previous page" enabled={page > 0 && !busy} onPress={onPrevious} />
      <span class="muted">Page {page + 1}</span>
      <PagerButton label="Next page" enabled={hasNext && !busy} onPress={onNext} />
    </nav>
  )
