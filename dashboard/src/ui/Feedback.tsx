/** The states every view shows: loading, empty, an error with its code, and a pinned key's refusal. */
import type { ComponentChildren } from "preact"
import type { Problem } from "../api.ts"
import { UserText } from "./Text.tsx"

export const Loading = ({ what }: { readonly what: string }) => (
  <p class="loading" role="status" aria-live="polite">
    Loading {what}…
  </p>
)

export const Empty = ({ children }: { readonly children: ComponentChildren }) => <p class="empty">{children}</p>

/**
 * How long to wait, in the words of who said it: the service refusing this page's request, or
 * the provider a record's run was refused by (a provider's 429 on a failed execution record).
 */
const waitSaid = (seconds: number, saidBy: "service" | "provider"): string =>
  saidBy === "service" ? `The service asks to wait: try again in ${seconds} s.` : `The provider asked to wait ${seconds} s before trying again.`

/**
 * The service's code and message, as text, with the request id to quote; a request that got no
 * answer says the service could not be reached, with no code (none is the service's). `saidBy` "provider"
 * when the problem is a record's error rather than this page's request (`RecordError`).
 */
export const ErrorNotice = (
  { problem, action, saidBy = "service" }: {
    readonly problem: Problem
    readonly action?: ComponentChildren
    readonly saidBy?: "service" | "provider"
  }
) => (
  <div class="error" role="alert">
    {problem.code === undefined ? (
      <p>
        {problem.status > 0
          ? <><strong>No answer from the service</strong> <span class="muted">(HTTP {problem.status})</span></>
          : <strong>Could not reach the service</strong>}
      </p>
    ) : (
      <p>
        <strong>Error</strong> <code class="error-code">{problem.code}</code>
        {problem.status > 0 ? <span class="muted"> (HTTP {problem.status})</span> : null}
      </p>
    )}
    <p class="error-message"><UserText text={problem.message} /></p>
    {problem.retryAfter === undefined ? null : <p class="retry-after">{waitSaid(problem.retryAfter, saidBy)}</p>}
    {problem.requestId === undefined ? null : <p class="muted">Request id: <code>{problem.requestId}</code></p>}
    {action}
  </div>
)

/** A failed or cancelled record's error (an execution's): its code, message and, when the provider said, how long to wait. */
export const RecordError = (
  { error }: { readonly error: { readonly code: string; readonly message: string; readonly retryable: boolean; readonly retryAfter?: number | undefined } }
) => (
  <ErrorNotice
    problem={{
      code: error.code,
      message: error.message,
      status: 0,
      retryable: error.retryable,
      ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter })
    }}
    saidBy="provider"
  />
)

/** Said instead of calling a route the service refuses to pinned keys (403 auth_insufficient_scope). */
export const PinnedNotice = ({ what, userId }: { readonly what: string; readonly userId: string }) => (
  <div class="notice" role="note">
    <p>
      <strong>Not available with this key.</strong> Your key is pinned to user <code><UserText text={userId} /></code>, and {what}{" "}
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
