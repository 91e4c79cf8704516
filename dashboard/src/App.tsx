/**
 * The shell: sign-in until `/v1/me` has accepted a key, then the header (project, key id, pinned
 * or not), the navigation and the current view. Moving between views puts focus on the view's
 * heading, so keyboard and screen-reader users start at the top of what changed.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks"
import { type Client, clientFor, isPinned, KEY_REFUSED, type Me, type Problem, toProblem } from "./api.ts"
import { forgetPages, ListOwner } from "./data.ts"
import { type Route, toSignIn, useRoute, whenLeaving } from "./router.ts"
import { forgetKey, storedKey, storeKey } from "./session.ts"
import { ErrorNotice, Loading } from "./ui/Feedback.tsx"
import { Link } from "./ui/Link.tsx"
import { OutcomeNotice } from "./ui/Outcome.tsx"
import { RetryWaitNotice } from "./ui/RetryWait.tsx"
import { UserText } from "./ui/Text.tsx"
import { Executions, ExecutionDetail } from "./views/Executions.tsx"
import { Files } from "./views/Files.tsx"
import { SignIn } from "./views/SignIn.tsx"
import { SubscriptionDetail } from "./views/SubscriptionDetail.tsx"
import { Subscriptions } from "./views/Subscriptions.tsx"
import { TriggerEvents } from "./views/TriggerEvents.tsx"
import { WebhookDetail } from "./views/WebhookDetail.tsx"
import { Webhooks } from "./views/Webhooks.tsx"

interface Session {
  readonly me: Me
  /** A client on the session's key whose requests stop once `signal` aborts (api.ts `clientFor`). */
  readonly connect: (signal: AbortSignal) => Client
}

const NAV: ReadonlyArray<{ readonly route: Route; readonly label: string; readonly views: ReadonlyArray<Route["view"]> }> = [
  { route: { view: "files" }, label: "Files", views: ["files"] },
  { route: { view: "webhooks" }, label: "Webhooks", views: ["webhooks", "webhook"] },
  { route: { view: "subscriptions" }, label: "Subscriptions", views: ["subscriptions", "subscription"] },
  { route: { view: "trigger-events" }, label: "Trigger events", views: ["trigger-events"] },
  { route: { view: "executions" }, label: "Executions", views: ["executions", "execution"] }
]

const titleOf = (route: Route): string => {
  switch (route.view) {
    case "files":
      return "Staged files"
    case "webhooks":
      return "Webhook endpoints"
    case "webhook":
      return "Webhook endpoint"
    case "subscriptions":
      return "Trigger subscriptions"
    case "subscription":
      return "Trigger subscription"
    case "trigger-events":
      return "Trigger event history"
    case "executions":
      return "Executions"
    case "execution":
      return "Execution"
    case "not-found":
      return "Not found"
  }
}

/** The record a view shows, if any: another record of the same view is a new page too. */
const recordOf = (route: Route): string => {
  switch (route.view) {
    case "webhook":
      return route.endpointId
    case "subscription":
      return route.subscriptionId
    case "execution":
      return route.executionId
    default:
      return ""
  }
}

/**
 * The client of the view shown (`view`: its name and record). Leaving it, or the session ending
 * (the shell goes), aborts what it still has to send: a request in flight, a poll, a retry
 * waiting out a rate limit; so nothing is sent for a view no longer shown, nor after Sign out
 * with the key signed out.
 */
const useViewClient = (session: Session, view: string): Client => {
  const scoped = useMemo(() => {
    const controller = new AbortController()
    return { controller, client: session.connect(controller.signal) }
  }, [session, view])
  useEffect(() => () => scoped.controller.abort(), [scoped])
  return scoped.client
}

const View = ({ route, client, me }: { readonly route: Route; readonly client: Client; readonly me: Me }) => {
  switch (route.view) {
    case "files":
      return <Files client={client} me={me} />
    case "webhooks":
      return <Webhooks client={client} me={me} />
    case "webhook":
      return <WebhookDetail key={route.endpointId} client={client} me={me} endpointId={route.endpointId} />
    case "subscriptions":
      return <Subscriptions client={client} me={me} />
    case "subscription":
      return <SubscriptionDetail key={route.subscriptionId} client={client} subscriptionId={route.subscriptionId} />
    case "trigger-events":
      return <TriggerEvents client={client} me={me} filters={route} />
    case "executions":
      return <Executions client={client} me={me} filters={route} />
    case "execution":
      return <ExecutionDetail key={route.executionId} client={client} executionId={route.executionId} from={route.from ?? {}} />
    case "not-found":
      return <p>There is no such page in the dashboard. <Link to={{ view: "files" }}>Go to the files</Link>.</p>
  }
}

const Shell = (
  { session, onSignOut, focusFirst }: { readonly session: Session; readonly onSignOut: () => void; readonly focusFirst: boolean }
) => {
  const route = useRoute()
  const heading = useRef<HTMLHeadingElement>(null)
  // After signing in the sign-in form is gone, so the heading takes the focus from the start.
  const first = useRef(!focusFirst)
  const title = titleOf(route)
  useEffect(() => {
    document.title = `${title} · Service dashboard`
    // Not on the first render: the page has just loaded and the browser's own focus is right.
    if (first.current) first.current = false
    else heading.current?.focus()
  }, [route.view, title, recordOf(route)])
  const { me } = session
  const view = `${route.view}\u0000${recordOf(route)}`
  const client = useViewClient(session, view)
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <div class="identity">
          <span class="product">Service dashboard</span>
          <span>
            Project <code data-testid="project-id">{me.projectId}</code> · key <code>{me.keyId}</code> ·{" "}
            {isPinned(me) ? <span data-testid="key-kind">pinned to user <code><UserText text={me.pinnedUserId ?? ""} /></code></span> : <span data-testid="key-kind">unpinned project key</span>}
          </span>
          {/* Signing out leaves the view too: what it holds (a secret shown once) asks first. */}
          <button type="button" onClick={() => whenLeaving(onSignOut)}>Sign out</button>
        </div>
        <nav aria-label="Views">
          <ul>
            {NAV.map((item) => (
              <li key={item.label}>
                <Link to={item.route} current={item.views.includes(route.view)}>{item.label}</Link>
              </li>
            ))}
          </ul>
        </nav>
      </header>
      <main id="main">
        <h1 ref={heading} tabIndex={-1}>{title}</h1>
        {/* A wait is the view's own: another view starts with none said (its retry is dropped). */}
        <RetryWaitNotice key={view} />
        <OutcomeNotice route={route} />
        {/* A list's cursors are this key's (data.ts): another key's session does not follow them. */}
        <ListOwner.Provider value={`${me.projectId}/${me.keyId}`}>
          <View route={route} client={client} me={me} />
        </ListOwner.Provider>
      </main>
    </>
  )
}

export const App = () => {
  // A key kept from earlier in this tab is checked again before anything is shown with it.
  const [state, setState] = useState<
    | { readonly kind: "checking" }
    | { readonly kind: "unreachable"; readonly problem: Problem }
    | { readonly kind: "signed-out"; readonly problem?: Problem }
    | { readonly kind: "signed-in"; readonly session: Session; readonly signedInHere?: boolean }
  >(() => (storedKey() === undefined ? { kind: "signed-out" } : { kind: "checking" }))

  /**
   * Ends the session: the key is forgotten, and the cursors of the list shown with it (data.ts).
   * Signing out by choice (no `problem`) also takes the address to the sign-in page's own
   * (router.ts `toSignIn`); a key the service refused keeps it, for the same user's next key.
   */
  const signOut = (problem?: Problem) => {
    forgetKey()
    forgetPages()
    if (problem === undefined) toSignIn()
    setState(problem === undefined ? { kind: "signed-out" } : { kind: "signed-out", problem })
  }

  /**
   * Checks the kept key. Only the service's refusal of it (401) signs out: a service that cannot
   * answer now (a restart, a 503, the network) keeps the key and offers to try again.
   */
  const check = () => {
    const key = storedKey()
    if (key === undefined) return setState({ kind: "signed-out" })
    setState({ kind: "checking" })
    clientFor(key).me().then(
      (me) => setState({ kind: "signed-in", session: { me, connect: (signal) => clientFor(key, signal) } }),
      (error: unknown) => {
        const problem = toProblem(error)
        if (problem.status === 401) {
          signOut(problem)
        } else {
          setState({ kind: "unreachable", problem })
        }
      }
    )
  }

  useEffect(() => {
    if (storedKey() !== undefined) check()
  }, [])

  // A key refused mid-session (revoked, or the service restarted without it) ends the session:
  // back to sign-in with the refusal, rather than views that can never load. A secret shown once
  // and not put away asks first (ui/LeaveGuard.tsx), so it can still be copied; the next refusal
  // asks again, and once it is put away nothing holds the way out.
  useEffect(() => {
    const refused = (event: Event) => {
      const problem = (event as CustomEvent<Problem>).detail
      whenLeaving(() =>
        setState((current) => {
          if (current.kind !== "signed-in") return current
          forgetKey()
          forgetPages()
          return { kind: "signed-out", problem }
        }), "refused")
    }
    window.addEventListener(KEY_REFUSED, refused)
    return () => window.removeEventListener(KEY_REFUSED, refused)
  }, [])

  switch (state.kind) {
    case "checking":
      return <main id="main"><Loading what="your session" /><RetryWaitNotice /></main>
    case "unreachable":
      return (
        <main id="main">
          <h1>Service dashboard</h1>
          <p>The service did not answer the check of your key; the key is kept. Try again in a moment.</p>
          <ErrorNotice problem={state.problem} action={<button type="button" onClick={check}>Try again</button>} />
          <p>
            <button
              type="button"
              onClick={() => signOut()}
            >
              Sign in with another key
            </button>
          </p>
        </main>
      )
    case "signed-out":
      return (
        <SignIn
          initialProblem={state.problem}
          onSignedIn={(me, key) => {
            storeKey(key)
            setState({ kind: "signed-in", session: { me, connect: (signal) => clientFor(key, signal) }, signedInHere: true })
          }}
        />
      )
    case "signed-in":
      return (
        <Shell
          session={state.session}
          focusFirst={state.signedInHere === true}
          onSignOut={() => signOut()}
        />
      )
  }
}
