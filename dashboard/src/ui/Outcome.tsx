/**
 * What an action that left its view did ("Endpoint whe_… deleted."), said on the view it led to.
 * The live region belongs to the shell, so it is on the page before the words arrive (a region
 * added together with its text is often not read out); the words stay while that view does and
 * go with the next one, so another view does not repeat them.
 */
import { useEffect, useState } from "preact/hooks"
import { hrefOf, type Route } from "../router.ts"

const OUTCOME = "service-dashboard:outcome"

interface Said {
  readonly text: string
  /** The view it is said on: where the action led. */
  readonly href: string
}

/** Says `text` on the current view; call it after navigate(). */
export const sayOutcome = (text: string): void => {
  window.dispatchEvent(new CustomEvent<Said>(OUTCOME, { detail: { text, href: window.location.pathname + window.location.search } }))
}

export const OutcomeNotice = ({ route }: { readonly route: Route }) => {
  const [said, setSaid] = useState<Said | undefined>(undefined)
  const here = hrefOf(route)
  useEffect(() => {
    const heard = (event: Event) => setSaid((event as CustomEvent<Said>).detail)
    window.addEventListener(OUTCOME, heard)
    return () => window.removeEventListener(OUTCOME, heard)
  }, [])
  useEffect(() => setSaid((current) => (current?.href === here ? current : undefined)), [here])
  const text = said?.href === here ? said.text : ""
  return <p role="status" aria-live="polite" class={text === "" ? "outcome" : "outcome success"}>{text}</p>
}
