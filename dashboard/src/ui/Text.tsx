/**
 * Text the dashboard did not write: a file's name, a user or connection id, a webhook URL, an
 * event's id, a service's message. Such a value may hold bidirectional control characters, and a
 * right-to-left override (U+202E) in "report\u202Efdp.exe" would show it as "reportexe.pdf" (a
 * disguised extension) and, inside a sentence, mirror the rest of the sentence around it.
 *
 * `UserText` isolates the value from the text around it (`<bdi>`: `unicode-bidi: isolate`), and
 * shows each bidi control character as its escape ("\u202E", marked and named in its title)
 * rather than applying it, so the value reads in the order of its characters. `shownText` does the
 * same for a value put into a string (an `aria-label`, a sentence a live region says).
 */

/** The bidi formatting characters: ALM, LRM, RLM, LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI. */
const CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g
const SPLIT = /([\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069])/

const NAMES: Readonly<Record<string, string>> = {
  "\u061C": "arabic letter mark",
  "\u200E": "left-to-right mark",
  "\u200F": "right-to-left mark",
  "\u202A": "left-to-right embedding",
  "\u202B": "right-to-left embedding",
  "\u202C": "pop directional formatting",
  "\u202D": "left-to-right override",
  "\u202E": "right-to-left override",
  "\u2066": "left-to-right isolate",
  "\u2067": "right-to-left isolate",
  "\u2068": "first strong isolate",
  "\u2069": "pop directional isolate"
}

const hex = (character: string) => (character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")

/** `\u202E` for U+202E. */
const escapeOf = (character: string) => `\\u${hex(character)}`

/** Whether `text` holds a bidi control character. */
export const hasBidiControls = (text: string): boolean => text.search(CONTROLS) >= 0

/** `text` with its bidi control characters written as escapes (`\u202E`), for a string. */
export const shownText = (text: string): string => text.replace(CONTROLS, escapeOf)

/** A JSON text with its bidi control characters as JSON's own escapes (`\u202e`): the same JSON, shown in its order. */
export const shownJson = (json: string): string => json.replace(CONTROLS, (character) => `\\u${hex(character).toLowerCase()}`)

/** A value from outside the dashboard, isolated from what is around it, its bidi controls shown as escapes. */
export const UserText = ({ text, class: className }: { readonly text: string; readonly class?: string | undefined }) => (
  <bdi class={className}>
    {hasBidiControls(text)
      ? text.split(SPLIT).map((part, index) =>
        index % 2 === 1
          ? (
            <span key={index} class="bidi-control" title={`A ${NAMES[part] ?? "bidi control"} character (U+${hex(part)}), shown rather than applied`}>
              {escapeOf(part)}
            </span>
          )
          : part
      )
      : text}
  </bdi>
)
