/**
 * Client-side routes under /dashboard with the History API: the server answers index.html for
 * every dashboard path, so a reload or a shared link lands on the same view. Only view names,
 * ids and list filters ever go into a URL, never a key, secret or ingest URL.
 */
import { useEffect, useState } from "preact/hooks"
import { type ExecutionStatus, listTools, listTriggers } from "../../client/index.ts"

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
  if (first === "trigger-events" && parts.length === 1) {
    // As for executions: a trigger the catalog does not have (the form could not show it) or a
    // blank subscription id is left out.
    const query = new URLSearchParams(search)
    const subscriptionId = query.get("subscriptionId")?.trim() ?? ""
    const trigger = query.get("trigger") ?? ""
    return {
      view: "trigger-events",
      ...(subscriptionId === "" ? {} : { subscriptionId }),
      ...(TRIGGERS.has(trigger) ? { trigger } : {})
    }
  }
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

export const navigate = (route: Route): void => {
  const href = hrefOf(route)
  if (href !== window.location.pathname + window.location.search) window.history.pushState(null, "", href)
  for (const listener of listeners) listener()
}

/** The same view with other filters, in place of the current history entry (no new Back step). */
export const replaceRoute = (route: Route): void => {
  const href = hrefOf(route)
  if (href !== window.location.pathname + window.location.search) window.history.replaceState(window.history.state, "", href)
  for (const listener of listeners) listener()
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
    const update = () => setRoute(current())
    listeners.add(update)
    window.addEventListener("popstate", update)
    // A route replaced before this listened (a view's first effects run before its shell's) is
    // taken up now.
    if (hrefOf(current()) !== hrefOf(route)) update()
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return route
}
