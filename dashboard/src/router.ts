/**
 * Client-side routes under /dashboard with the History API: the server answers index.html for
 * every dashboard path, so a reload or a shared link lands on the same view. Only view names,
 * ids and list filters ever go into a URL, never a key, secret or ingest URL.
 *
 * A change of view (a link, navigate(), Back and Forward) first asks what the page would lose by
 * it (holdLeaving: a secret shown once), and goes on only if the user leaves.
 */
import { useEffect, useState } from "preact/hooks"
import { type ExecutionStatus, listTools, listTriggers } from "../../client/index.ts"
import { makeHolds } from "./holds.ts"

export const BASE = "/dashboard"

export const EXECUTION_STATUSES: ReadonlyArray<ExecutionStatus> = ["pending", "running", "succeeded", "failed", "cancelled"]

/** The executions list's filters, as its URL carries them. */
export interface ExecutionFilters {
  readonly status?: ExecutionStatus
  readonly tool?: string
  readonly userId?: string
}

export type Route =
  | { readonly view: "files" }
  | { readonly view: "webhooks" }
  | { readonly view: "webhook"; readonly endpointId: string }
  | { readonly view: "subscriptions" }
  | { readonly view: "subscription"; readonly subscriptionId: string }
  | { readonly view: "trigger-events"; readonly subscriptionId?: string; readonly trigger?: string }
  | ({ readonly view: "executions" } & ExecutionFilters)
  /** One record; `from` is the list's filters it was opened from, for the way back. */
  | { readonly view: "execution"; readonly executionId: string; readonly from?: ExecutionFilters }
  | { readonly view: "not-found" }

const decode = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
  }
}

const isStatus = (value: string): value is ExecutionStatus => (EXECUTION_STATUSES as ReadonlyArray<string>).includes(value)
const TOOLS: ReadonlySet<string> = new Set(listTools().map((tool) => tool.name))
const TRIGGERS: ReadonlySet<string> = new Set(listTriggers().map((trigger) => trigger.name))
/** The service's user id rule (domain/Ids.ts `UserId`). */
const USER_ID = /^[A-Za-z0-9_.-]{1,64}$/
/**
 * The service's subscription id rule (domain/Ids.ts `SubscriptionId`: `trgsub_` and 32 lower-case
 * Crockford base32 characters); GET /v1/trigger-events refuses (422) any other.
 */
export const SUBSCRIPTION_ID = /^trgsub_[0-9a-hjkmnp-tv-z]{32}$/

/**
 * Filters from a link or a reload: a value the list could not use (an unknown status or tool, a
 * user id the service would refuse) is left out, so the list shows unfiltered rather than failing.
 */
const executionFilters = (search: string): ExecutionFilters => {
  const query = new URLSearchParams(search)
  const status = query.get("status") ?? ""
  const tool = query.get("tool") ?? ""
  const userId = query.get("userId") ?? ""
  return {
    ...(isStatus(status) ? { status } : {}),
    ...(TOOLS.has(tool) ? { tool } : {}),
    ...(USER_ID.test(userId) ? { userId } : {})
  }
}

/**
 * The trigger event history's filters, left out as the executions' are: a trigger the catalog
 * does not have (the form could not show it), or a subscription id that is not one (blank, or
 * malformed: the service would refuse the list).
 */
const triggerEventFilters = (search: string): { readonly subscriptionId?: string; readonly trigger?: string } => {
  const query = new URLSearchParams(search)
  const subscriptionId = query.get("subscriptionId")?.trim() ?? ""
  const trigger = query.get("trigger") ?? ""
  return {
    ...(SUBSCRIPTION_ID.test(subscriptionId) ? { subscriptionId } : {}),
    ...(TRIGGERS.has(trigger) ? { trigger } : {})
  }
}

export const parseRoute = (pathname: string, search: string): Route => {
  const rest = pathname.startsWith(BASE) ? pathname.slice(BASE.length) : pathname
  const parts = rest.split("/").filter((part) => part !== "")
  const [first, second] = parts
  if (parts.length === 0 || (first === "files" && parts.length === 1)) return { view: "files" }
  if (first === "webhooks" && parts.length === 1) return { view: "webhooks" }
  if (first === "webhooks" && parts.length === 2 && second !== undefined) {
    const endpointId = decode(second)
    if (endpointId !== undefined) return { view: "webhook", endpointId }
  }
  if (first === "subscriptions" && parts.length === 1) return { view: "subscriptions" }
  if (first === "subscriptions" && parts.length === 2 && second !== undefined) {
    const subscriptionId = decode(second)
    if (subscriptionId !== undefined) return { view: "subscription", subscriptionId }
  }
  if (first === "trigger-events" && parts.length === 1) return { view: "trigger-events", ...triggerEventFilters(search) }
  if (first === "executions" && parts.length === 1) return { view: "executions", ...executionFilters(search) }
  if (first === "executions" && parts.length === 2 && second !== undefined) {
    const executionId = decode(second)
    const from = executionFilters(search)
    if (executionId !== undefined) return { view: "execution", executionId, ...(Object.keys(from).length === 0 ? {} : { from }) }
  }
  return { view: "not-found" }
}

/** `?status=…&tool=…&userId=…` of the filters set, or nothing. */
const filtersQuery = (filters: ExecutionFilters): string => {
  const query = new URLSearchParams()
  if (filters.status !== undefined) query.set("status", filters.status)
  if (filters.tool !== undefined) query.set("tool", filters.tool)
  if (filters.userId !== undefined) query.set("userId", filters.userId)
  const search = query.toString()
  return search === "" ? "" : `?${search}`
}

export const hrefOf = (route: Route): string => {
  switch (route.view) {
    case "files":
      return `${BASE}/files`
    case "webhooks":
      return `${BASE}/webhooks`
    case "webhook":
      return `${BASE}/webhooks/${encodeURIComponent(route.endpointId)}`
    case "subscriptions":
      return `${BASE}/subscriptions`
    case "subscription":
      return `${BASE}/subscriptions/${encodeURIComponent(route.subscriptionId)}`
    case "trigger-events": {
      const query = new URLSearchParams()
      if (route.subscriptionId !== undefined) query.set("subscriptionId", route.subscriptionId)
      if (route.trigger !== undefined) query.set("trigger", route.trigger)
      const search = query.toString()
      return `${BASE}/trigger-events${search === "" ? "" : `?${search}`}`
    }
    case "executions":
      return `${BASE}/executions${filtersQuery(route)}`
    case "execution":
      return `${BASE}/executions/${encodeURIComponent(route.executionId)}${filtersQuery(route.from ?? {})}`
    case "not-found":
      return BASE
  }
}

const listeners = new Set<() => void>()

/** The address shown now, path and query. */
const address = (): string => window.location.pathname + window.location.search

/**
 * What the page would lose by leaving its view (a secret shown once: ui/LeaveGuard.tsx) holds the
 * way out: a change of view asks the latest hold first, and goes on only if it lets it.
 */
/**
 * Why the view would be left: `leave`, the user goes elsewhere (a link, Back or Forward, Sign
 * out); `refused`, the service refused the key mid-session, so the dashboard signs out.
 */
export type Leaving = "leave" | "refused"

const leaving = makeHolds<Leaving>("leave")

/** Asks `ask` before the view changes, until the returned release is called. */
export const holdLeaving = leaving.hold

/** Runs `proceed` (something that leaves the view: another view, signing out) now, or once the page's hold lets it. */
export const whenLeaving = leaving.when

/**
 * Each history entry of the dashboard carries its place in the tab's history, so a Back or
 * Forward that a hold keeps back can be undone (and, once allowed, done again) by the same count.
 */
const INDEX = "dashboard:index"

const indexOf = (state: unknown): number | undefined => {
  if (typeof state !== "object" || state === null) return undefined
  const index: unknown = (state as Readonly<Record<string, unknown>>)[INDEX]
  return typeof index === "number" ? index : undefined
}

/** The place of the entry shown, and the view it shows (canonical href). */
let index = 0
let shown = ""

const changed = (): void => {
  shown = hrefOf(current())
  for (const listener of listeners) listener()
}

/**
 * Another view, as a new history entry. It asks the page first (holdLeaving) unless `ask` is
 * false: where the view is going anyway (a deleted record's page), nothing it holds is of use.
 */
export const navigate = (route: Route, { ask = true }: { readonly ask?: boolean } = {}): void => {
  const href = hrefOf(route)
  // The view shown already: nothing leaves it.
  if (href === address()) return changed()
  const go = () => {
    index += 1
    window.history.pushState({ [INDEX]: index }, "", href)
    changed()
  }
  if (ask) whenLeaving(go)
  else go()
}

/** The same view with other filters, in place of the current history entry (no new Back step). */
export const replaceRoute = (route: Route): void => {
  const href = hrefOf(route)
  if (href !== address()) window.history.replaceState(window.history.state, "", href)
  changed()
}

/** Set while the browser goes back to the entry shown (a traversal held back), and while it goes on with one the user let go. */
let restoring = false
let passing = false

/**
 * The browser's Back or Forward (or a fragment link). A hold asks first: the traversal is undone at
 * once (the view never changed), and done again by the same count if the user leaves.
 */
const popped = (): void => {
  if (restoring) {
    restoring = false
    return
  }
  const target = indexOf(window.history.state)
  const go = () => {
    passing = false
    if (target === undefined) window.history.replaceState({ ...(window.history.state as object | null), [INDEX]: index }, "")
    else index = target
    changed()
  }
  const delta = target === undefined ? -1 : target - index
  // Nothing to ask: let go, the same view (a fragment), or no way to undo it.
  if (passing || !leaving.held() || hrefOf(current()) === shown || delta === 0) return go()
  restoring = true
  window.history.go(-delta)
  whenLeaving(() => {
    passing = true
    window.history.go(delta)
  })
}

/**
 * Sign out: the entry shown takes the sign-in page's own address, without the view or its filters
 * (a user id among them is the last session's), so the next key starts on the dashboard's first
 * view. In place of the entry, not a new one; no view is told, as the shell goes with the session.
 */
export const toSignIn = (): void => {
  if (address() !== BASE) window.history.replaceState(window.history.state, "", BASE)
  shown = hrefOf(current())
}

let following = false

/** Once: the entry shown gets its place (kept through a reload), and Back and Forward are followed. */
const follow = (): void => {
  if (following) return
  following = true
  const state: unknown = window.history.state
  const known = indexOf(state)
  if (known === undefined) window.history.replaceState({ ...(typeof state === "object" ? state : {}), [INDEX]: index }, "")
  else index = known
  shown = hrefOf(current())
  window.addEventListener("popstate", popped)
}

const current = (): Route => parseRoute(window.location.pathname, window.location.search)

/**
 * A query that names values the route left out (parseRoute) is written as the route has it, so
 * the URL says what the view shows: a reload or a copied link then agrees with the page.
 */
const canonicalize = (): void => {
  // From the location itself, never from a route held in state, which may be older.
  const route = current()
  if (route.view === "not-found") return
  const href = hrefOf(route)
  const here = window.location.pathname + window.location.search
  if (href !== here && href.split("?")[0] === window.location.pathname) window.history.replaceState(window.history.state, "", href)
}

/** The current route, following links, navigate() and the browser's back and forward. */
export const useRoute = (): Route => {
  const [route, setRoute] = useState(current)
  useEffect(canonicalize, [route])
  useEffect(() => {
    follow()
    const update = () => setRoute(current())
    listeners.add(update)
    // A route replaced before this listened (a view's first effects run before its shell's) is
    // taken up now.
    if (hrefOf(current()) !== hrefOf(route)) update()
    return () => {
      listeners.delete(update)
    }
  }, [])
  return route
}
