/**
 * Client-side routes under /dashboard with the History API: the server answers index.html for
 * every dashboard path, so a reload or a shared link lands on the same view. Only view names,
 * ids and list filters ever go into a URL, never a key, secret or ingest URL.
 */
import { useEffect, useState } from "preact/hooks"

export const BASE = "/dashboard"

export type Route =
  | { readonly view: "files" }
  | { readonly view: "webhooks" }
  | { readonly view: "webhook"; readonly endpointId: string }
  | { readonly view: "subscriptions" }
  | { readonly view: "trigger-events"; readonly subscriptionId?: string; readonly trigger?: string }
  | { readonly view: "executions" }
  | { readonly view: "execution"; readonly executionId: string }
  | { readonly view: "not-found" }

const decode = (segment: string): string | undefined => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return undefined
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
  if (first === "trigger-events" && parts.length === 1) {
    const query = new URLSearchParams(search)
    const subscriptionId = query.get("subscriptionId") ?? undefined
    const trigger = query.get("trigger") ?? undefined
    return {
      view: "trigger-events",
      ...(subscriptionId === undefined ? {} : { subscriptionId }),
      ...(trigger === undefined ? {} : { trigger })
    }
  }
  if (first === "executions" && parts.length === 1) return { view: "executions" }
  if (first === "executions" && parts.length === 2 && second !== undefined) {
    const executionId = decode(second)
    if (executionId !== undefined) return { view: "execution", executionId }
  }
  return { view: "not-found" }
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
    case "trigger-events": {
      const query = new URLSearchParams()
      if (route.subscriptionId !== undefined) query.set("subscriptionId", route.subscriptionId)
      if (route.trigger !== undefined) query.set("trigger", route.trigger)
      const search = query.toString()
      return `${BASE}/trigger-events${search === "" ? "" : `?${search}`}`
    }
    case "executions":
      return `${BASE}/executions`
    case "execution":
      return `${BASE}/executions/${encodeURIComponent(route.executionId)}`
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

const current = (): Route => parseRoute(window.location.pathname, window.location.search)

/** The current route, following links, navigate() and the browser's back and forward. */
export const useRoute = (): Route => {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const update = () => setRoute(current())
    listeners.add(update)
    window.addEventListener("popstate", update)
    return () => {
      listeners.delete(update)
      window.removeEventListener("popstate", update)
    }
  }, [])
  return route
}
