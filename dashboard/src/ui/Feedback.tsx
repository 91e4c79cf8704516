/** The states every view shows: loading, empty, an error with its code, and a pinned key's refusal. */
import type { ComponentChildren } from "preact"
import type { Problem } from "../api.ts"

export const Loading = ({ what }: { readonly what: string }) => (
  <p class="loading" role="status" aria-live="polite">
    Loading {what}…
  </p>
)

export const Empty = ({ children }: { readonly children: ComponentChildren }) => <p class="empty">{children}</p>

/** The service's code and message, as text, with the request id to quote. */
export const ErrorNotice = (
  { problem, action }: { readonly problem: Problem; readonly action?: ComponentChildren }
) => (
  <div class="error" role="alert">
    <p>
      <strong>Error</strong> <code class="error-code">{problem.code}</code>
      {problem.status > 0 ? <span class="muted"> (HTTP {problem.status})</span> : null}
    </p>
    <p class="error-message">{problem.message}</p>
    {problem.retryAfter === undefined ? null : <p class="retry-after">The service asks to wait: try again in {problem.retryAfter} s.</p>}
    {problem.requestId === undefined ? null : <p class="muted">Request id: <code>{problem.requestId}</code></p>}
    {action}
  </div>
)

/** Said instead of calling a route the service refuses to pinned keys (403 auth_insufficient_scope). */
export const PinnedNotice = ({ what, userId }: { readonly what: string; readonly userId: string }) => (
  <div class="notice" role="note">
    <p>
      <strong>Not available with this key.</strong> Your key is pinned to user <code>{userId}</code>, and {what}{" "}
      {what.endsWith("s") ? "need" : "needs"} an unpinned project key. Sign in with a project key to use it.
    </p>
  </div>
)

/** A field whose change is whole at `change` (a tick, a choice); text-like fields change at each `input`. */
const isChoice = (target: EventTarget | null): boolean =>
  target instanceof HTMLSelectElement || (target instanceof HTMLInputElement && (target.type === "checkbox" || target.type === "radio"))

/**
 * A form's handlers that take its shown error away once one of its fields changes: the error is
 * about what was sent (or refused in the page), not what the form now holds. A tick or a choice
 * drops it at `change`, after the field's own handler, since a render between its `input` and
 * `change` would undo a controlled checkbox's or select's new state.
 */
export const dropErrorOnEdit = (drop: () => void) => ({
  onInput: (event: Event) => {
    if (!isChoice(event.target)) drop()
  },
  onChange: (event: Event) => {
    if (isChoice(event.target)) drop()
  }
})
