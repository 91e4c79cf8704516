/**
 * Sign-in: the user pastes a project API key, the dashboard asks `/v1/me` who it is, and only
 * then keeps it (sessionStorage). The field is a password field, cleared on success, and the key
 * is never echoed into the page. While the client library waits to retry a refused check (a 429,
 * or a 503 with a delay) the page says so, and Cancel drops the attempt and its waiting retry.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { clientFor, type Me, type Problem, toProblem } from "../api.ts"
import { Button } from "../ui/Button.tsx"
import { dropErrorOnEdit, ErrorNotice } from "../ui/Feedback.tsx"
import { RetryWaitNotice } from "../ui/RetryWait.tsx"

/** The characters of an API key (the service's keys match `[A-Za-z0-9_-]{16,128}`; the length is the service's to refuse). */
const KEY_CHARACTERS = /^[A-Za-z0-9_-]+$/

/** The Authorization header's scheme before a pasted key, in any case. */
const BEARER = /^bearer\s+/i

/** The error shown, which the key field names while it shows. */
const ERROR_ID = "sign-in-error"

/** A refusal of the key itself: the page's own (none pasted, other characters) or the service's (401). */
const aboutTheKey = (problem: Problem): boolean => problem.status === 401 || (problem.status === 0 && problem.code === "invalid_input")

export const SignIn = (
  { onSignedIn, initialProblem }: { readonly onSignedIn: (me: Me, key: string) => void; readonly initialProblem?: Problem | undefined }
) => {
  const [problem, setProblem] = useState<Problem | undefined>(initialProblem)
  const [busy, setBusy] = useState(false)
  const field = useRef<HTMLInputElement>(null)
  // The attempt in flight: aborting it (Cancel) stops its request and any retry waiting to be sent.
  const attempt = useRef<AbortController | undefined>(undefined)
  // Each attempt's wait notice starts empty: a cancelled one's is not said on.
  const [attempts, setAttempts] = useState(0)

  useEffect(() => {
    // Signed out from a view (Sign out, or the key refused): the tab no longer names that view.
    document.title = "Sign in · Service dashboard"
    field.current?.focus()
    // What the budget measures as "interactive": the form is rendered, focused and wired.
    performance.mark("dashboard:interactive")
  }, [])

  const submit = async (event: Event) => {
    event.preventDefault()
    if (busy) return
    const input = field.current
    // A key copied with its header's scheme ("Bearer sk_…") is the key after it.
    const key = (input?.value.trim() ?? "").replace(BEARER, "").trim()
    if (key === "") {
      setProblem({ code: "invalid_input", message: "Paste an API key first.", status: 0, retryable: false })
      return
    }
    if (!KEY_CHARACTERS.test(key)) {
      // Not a key: the service would refuse it, and one outside Latin-1 cannot even be sent as a
      // header (the browser's fetch throws, which read as the service unreachable).
      setProblem({
        code: "invalid_input",
        message: "An API key holds only letters (A-Z, a-z), digits, _ and -; the key pasted has other characters. Paste the key again.",
        status: 0,
        retryable: false
      })
      return
    }
    const controller = new AbortController()
    attempt.current = controller
    setAttempts((n) => n + 1)
    setBusy(true)
    setProblem(undefined)
    try {
      const me = await clientFor(key, controller.signal).me()
      if (controller.signal.aborted) return
      if (input !== null) input.value = ""
      onSignedIn(me, key)
    } catch (error) {
      if (controller.signal.aborted) return
      setProblem(toProblem(error))
      setBusy(false)
    } finally {
      if (attempt.current === controller) attempt.current = undefined
    }
  }

  const cancel = () => {
    attempt.current?.abort()
    attempt.current = undefined
    setAttempts((n) => n + 1)
    setBusy(false)
    field.current?.focus()
  }

  return (
    <main id="main" class="sign-in">
      <h1>Sign in</h1>
      <p>
        Paste a project API key. It stays in this tab's session storage only, and is sent to this service in the
        Authorization header; closing the tab forgets it.
      </p>
      <form
        onSubmit={submit}
        // A refusal is about the key it was shown for: it goes once the key changes.
        {...dropErrorOnEdit(() => setProblem(undefined))}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          ref={field}
          type="password"
          name="api-key"
          autocomplete="off"
          spellcheck={false}
          required
          readOnly={busy}
          // The field names the error while it shows, and says it is invalid when the error is
          // about the key (not when the service could not be reached or asked to wait).
          aria-invalid={problem !== undefined && aboutTheKey(problem) ? "true" : undefined}
          aria-describedby={problem === undefined ? undefined : ERROR_ID}
        />
        <Button type="submit" enabled={!busy}>{busy ? "Signing in…" : "Sign in"}</Button>
        {busy ? <button type="button" onClick={cancel}>Cancel</button> : null}
      </form>
      <RetryWaitNotice key={attempts} />
      {problem === undefined ? null : <div id={ERROR_ID}><ErrorNotice problem={problem} /></div>}
    </main>
  )
}
