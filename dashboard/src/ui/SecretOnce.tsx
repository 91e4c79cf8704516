/**
 * A secret the service shows only once (a webhook signing secret, an ingest URL): displayed as
 * text with a copy button until dismissed, then gone from the page for good.
 */
import { useState } from "preact/hooks"

export const SecretOnce = (
  { title, label, value, onDone }: { readonly title: string; readonly label: string; readonly value: string; readonly onDone: () => void }
) => {
  const [copied, setCopied] = useState<"no" | "yes" | "failed">("no")
  const id = `secret-${label.replace(/\W+/g, "-").toLowerCase()}`
  return (
    <section class="secret" aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{title}</h3>
      <p>
        <strong>Shown once.</strong> Copy it now: the service will not show it again.
      </p>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input id={id} class="secret-value" type="text" readOnly value={value} spellcheck={false} autocomplete="off" />
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value)
              setCopied("yes")
            } catch {
              setCopied("failed")
            }
          }}
        >
          Copy {label.toLowerCase()}
        </button>
      </div>
      <p role="status" aria-live="polite" class="muted">
        {copied === "yes" ? "Copied to the clipboard." : copied === "failed" ? "Copy failed: select the text and copy it." : ""}
      </p>
      <button type="button" onClick={onDone}>I have stored it</button>
    </section>
  )
}
