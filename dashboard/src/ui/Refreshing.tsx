/**
 * Says that a list refreshes itself while something on it is still moving (data.ts `usePaged`
 * polls every 2 s then). The status element is always there, empty when the list is still, so
 * that it is said when it starts.
 */
export const Refreshing = ({ polling, while: what }: { readonly polling: boolean; readonly while: string }) => (
  <p class="muted" role="status">{polling ? `Refreshing every 2 seconds while ${what}.` : ""}</p>
)
