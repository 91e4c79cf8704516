/**
 * A secret the service shows only once (a webhook signing secret, an ingest URL): displayed as
 * text with a copy button until dismissed, then gone from the page for good.
 *
 * It must be seen, and so must what loses it: the panel says that putting it away, leaving or
 * reloading the page loses it, and its last button says what it does.
 *
 * When it appears, the page scrolls to it and its heading takes the focus (a
 * screen reader reads it out); a new secret replacing another does the same.
 *
 * Until it is put away, leaving asks first (LeaveGuard.tsx): the browser's prompt on a reload or
 * on closing the tab, a dialog of the page on a link, Back or signing out; staying comes back here.
 * An action that would show another secret in its place asks the same way (whenReplacing).
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { useLeaveGuard } from "./LeaveGuard.tsx"

/**
 * Copies `text`: the Clipboard API where the page may use it (a secure context: HTTPS or
 * loopback), else the selected input and the older copy command, which browsers still allow
 * during a click on a plain-HTTP page (a dashboard opened by another machine's address).
 */
const copy = async (text: string, input: HTMLInputElement | null): Promise<boolean> => {
  try {
    if (navigator.clipboard !== undefined) {
      await navigator.clipboard.writeText(text)
      return true
    }
  } catch {
    // Refused (no permission, not focused): try the older way.
  }
  if (input === null) return false
  input.focus()
  input.select()
  try {
    return document.execCommand("copy")
  } catch {
    return false
  }
}

export const SecretOnce = (
  { title, label, value, onDone, children }: {
    readonly title: string
    readonly label: string
    readonly value: string
    readonly onDone: () => void
    /** Anything to say beside the secret (a link to what was created). */
    readonly children?: ComponentChildren
  }
) => {
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no")
  const heading = useRef<HTMLHeadingElement>(null)
  const input = useRef<HTMLInputElement>(null)
  const id = `secret-${label.replace(/\W+/g, "-").toLowerCase()}`
  const show = () => {
    heading.current?.scrollIntoView({ block: "start" })
    heading.current?.focus()
  }
  useEffect(() => {
    setCopied("no")
    show()
  }, [value])
  // "Ingest URL" reads "ingest URL" in a sentence (only its first letter lowered: "URL" stays).
  const inSentence = label.charAt(0).toLowerCase() + label.slice(1)
  const leaving = useLeaveGuard({ what: inSentence, onStay: show })
  return (
    <section class="secret" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`} ref={heading} tabIndex={-1}>{title}</h3>
      {children}
      <p>
        <strong>Shown once.</strong> Copy it now: the service will not show it again. It is gone from the page for good when you
        put it away, leave this page or reload it.
      </p>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input ref={input} id={id} class="secret-value" type="text" readOnly value={value} spellcheck={false} autocomplete="off" />
        <button type="button" onClick={async () => setCopied((await copy(value, input.current)) ? "yes" : "failed")}>
          Copy {inSentence}
        </button>
      </div>
      <p role="status" aria-live="polite" class="muted">
        {copied === "yes" ? "Copied to the clipboard." : copied === "failed" ? "Copy failed: the text is selected; copy it with Ctrl+C (⌘C)." : ""}
      </p>
      <button
        type="button"
        onClick={() => {
          // The panel goes: the focus moves to the view's heading rather than the page's body.
          document.querySelector<HTMLElement>("main h1")?.focus()
          onDone()
        }}
      >
        I have stored it: remove the {inSentence} from the page
      </button>
      {leaving}
    </section>
  )
}
