/**
 * A catalog description as text, with its Markdown `code` spans as code elements: the text is
 * split on backticks and each part becomes a text node or a `<code>`, so nothing in it is parsed
 * as markup. A backtick without its pair stays as written.
 */
/** The parts of `text`: even indexes plain, odd ones code. An unpaired last backtick stays as text. */
export const codeParts = (text: string): ReadonlyArray<string> => {
  const parts = text.split("`")
  if (parts.length % 2 === 1) return parts
  const last = parts.pop() ?? ""
  const before = parts.pop() ?? ""
  return [...parts, `${before}\`${last}`]
}

export const CodeText = ({ text }: { readonly text: string }) => (
  <>{codeParts(text).map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part))}</>
)
