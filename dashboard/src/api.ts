/**
 * The dashboard's only way to the service: the project's client library (client/), against the
 * page's own origin, so the Content-Security-Policy's `connect-src 'self'` holds.
 */
import { type Client, createClient, type Me, ServiceError } from "../../client/index.ts"

export type { Client, Me }

/** Dispatched on `window` when the client waits to retry a refused GET (ui/RetryWait.tsx says so). */
export const RETRY_WAIT = "service-dashboard:retry-wait"

export interface RetryWaitDetail {
  readonly status: number
  readonly code: string
  readonly seconds: number
}

/**
 * A read (GET) that gets no answer within this is given up, as one that could not reach the
 * service: a connection that swallows requests (a proxy without a timeout, a network gone quiet)
 * would otherwise leave the view waiting for ever, its Refresh and pager disabled and its polling
 * stopped. Writes are not cut: an upload on a slow link may take longer, and the person who
 * sent it sees it busy.
 */
export const READ_TIMEOUT_MS = 15_000

/**
 * A client on `apiKey`. Once `signal` aborts (its view left, the session over: App.tsx), it sends
 * nothing more: a request in flight is aborted, and one not sent yet, such as the client library's
 * retry waiting out a 429's Retry-After, fails without being sent; so no request carries a key
 * after Sign out. Such a call rejects as one that got no answer, which no view is left to show.
 */
export const clientFor = (apiKey: string, signal?: AbortSignal): Client =>
  createClient({
    baseUrl: window.location.origin,
    apiKey,
    fetch: (input, init) => {
      if (signal?.aborted === true) return Promise.reject(new Error("The view that asked for it was left."))
      const deadline = (init.method ?? "GET").toUpperCase() === "GET" ? AbortSignal.timeout(READ_TIMEOUT_MS) : undefined
      const signals = [init.signal, signal, deadline].filter((one): one is AbortSignal => one !== undefined && one !== null)
      return window.fetch(input, { ...init, signal: AbortSignal.any(signals) }).catch((error: unknown) => {
        if (deadline?.aborted === true && signal?.aborted !== true) throw new Error(`The service did not answer within ${READ_TIMEOUT_MS / 1000} s.`)
        throw error
      })
    },
    onRetryWait: ({ error, seconds }) => {
      if (signal?.aborted === true) return
      window.dispatchEvent(new CustomEvent<RetryWaitDetail>(RETRY_WAIT, { detail: { status: error.status, code: error.code, seconds } }))
    }
  })

/**
 * What a failed call shows: the service's code and message (and request id to quote), or, when
 * the request got no answer from the service at all, that it could not be reached.
 */
export interface Problem {
  /**
   * The service's error code. Absent only when the request got no answer from the service (the
   * network, the service down, a request the browser would not send: status 0, and `ErrorNotice`
   * says the service could not be reached) or an answer that is not the service's (a proxy's
   * error page: its status, and `ErrorNotice` says no answer came from the service): no code is
   * the service's then.
   */
  readonly code?: string
  readonly message: string
  readonly status: number
  readonly requestId?: string
  /** Whether trying again may succeed (the service's `retryable`; a network failure too). */
  readonly retryable: boolean
  /** Seconds to wait first, when the service said. */
  readonly retryAfter?: number
}

/** Dispatched on `window` when the service refuses the key (401): the session is over (App.tsx). */
export const KEY_REFUSED = "service-dashboard:key-refused"

/**
 * The client library's failure for a request that got no answer (client/README.md, Errors: "A
 * network failure is `provider_unavailable`, retryable, status 0", with no request id). That code
 * is the client's stand-in, not the service's word: the service says `provider_unavailable` when
 * an upstream provider failed, and then with a status and a request id.
 */
const unanswered = (error: ServiceError): boolean => error.status === 0 && error.requestId === "" && error.code === "provider_unavailable"

/** The client library's message for it is "The service could not be reached: <the browser's reason>". */
const browserReason = (message: string): string => message.replace(/^The service could not be reached:\s*/, "")

/**
 * The client library's failure for an error status whose body is not the service's envelope (a
 * proxy's or gateway's own page): its code is guessed from the status (a 502 reads
 * `provider_unavailable`, which the service uses for a tool's provider), so no code is shown.
 * A 401 keeps its guess: it ends the session however it came.
 */
const unenveloped = (error: ServiceError): boolean => error.status !== 401 && error.status > 0 && /^HTTP \d+ without an error envelope\.$/.test(error.message)

export const toProblem = (error: unknown): Problem => {
  if (error instanceof ServiceError && unanswered(error)) {
    // Still retryable: a list that polls tries again, as after a 503.
    return { message: `No answer came back; the browser said: ${browserReason(error.message)}`, status: 0, retryable: true }
  }
  if (error instanceof ServiceError && unenveloped(error)) {
    return {
      message: `HTTP ${error.status} came back without the service's error: something between the browser and the service (a proxy or gateway) answered it.`,
      status: error.status,
      retryable: error.retryable,
      ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter })
    }
  }
  if (error instanceof ServiceError) {
    const problem: Problem = {
      code: error.code,
      message: error.message,
      status: error.status,
      retryable: error.retryable,
      ...(error.retryAfter === undefined ? {} : { retryAfter: error.retryAfter }),
      ...(error.requestId === "" ? {} : { requestId: error.requestId })
    }
    if (error.status === 401) window.dispatchEvent(new CustomEvent<Problem>(KEY_REFUSED, { detail: problem }))
    return problem
  }
  // Not the service's answer (a bug or a browser failure): still shown, never thrown away.
  return { code: "dashboard_error", message: error instanceof Error ? error.message : String(error), status: 0, retryable: false }
}

/** The routes a user-pinned key is refused on (spec, Authentication 3). */
export const isPinned = (me: Me): boolean => me.pinnedUserId !== undefined
