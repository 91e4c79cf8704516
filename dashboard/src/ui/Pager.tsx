/**
 * Cursor paging: forward by the page's nextCursor, back through the cursors already followed.
 * A button that cannot act now keeps the keyboard focus while the next page loads (ui/Button.tsx),
 * and stays on the screen (ui/ListState.tsx keeps the rows shown until the next arrive).
 */
import { Button } from "./Button.tsx"

const PagerButton = ({ label, enabled, onPress }: { readonly label: string; readonly enabled: boolean; readonly onPress: () => void }) => (
  <Button enabled={enabled} onPress={onPress}>{label}</Button>
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
