import { shownJson } from "./Text.tsx"

/**
 * A JSON value from the API, pretty-printed as text (never as markup); a bidi control character
 * in one of its strings (a tool's input echoed) is shown as JSON's escape, not applied (Text.tsx).
 */
export const Json = ({ value, label }: { readonly value: unknown; readonly label: string }) => (
  <pre class="json" aria-label={label} tabIndex={0}>{shownJson(JSON.stringify(value, null, 2))}</pre>
)
