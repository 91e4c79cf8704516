/** A JSON value from the API, pretty-printed as text (never as markup). */
export const Json = ({ value, label }: { readonly value: unknown; readonly label: string }) => (
  <pre class="json" aria-label={label} tabIndex={0}>{JSON.stringify(value, null, 2)}</pre>
)
