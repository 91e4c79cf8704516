/**
 * One HTTP exchange with the service over `fetch`: bearer key, JSON bodies, the error envelope
 * as a `ServiceError`, and the retry policy. A 429 on GET or HEAD is retried exactly once after
 * the `retryAfter` the service gave (envelope, else `Retry-After`), and so is a 503 that gives
 * one (the service's store is away for a moment); other methods are never retried, because a
 * retried POST, PATCH or DELETE could act twice.
 */
import { Clock, Duration, Effect, Schema } from "effect"
import { fromResponse, networkError, ServiceError, timedOut, unsendable } from "./ServiceError.ts"

export type Fetch = (input: string, init: RequestInit) => Promise<Response>

/** The one retry about to wait: the refused request, the refusal, and the seconds until it is sent again. */
export interface RetryWait {
  readonly method: Method
  /** The route's path, e.g. `/v1/executions` (without the query). */
  readonly path: string
  readonly seconds: number
  readonly error: ServiceError
}

export interface TransportOptions {
  /** The service's base address, e.g. `http://localhost:8080`. */
  readonly baseUrl: string
  readonly apiKey: string
  /** Defaults to the global `fetch`. */
  readonly fetch?: Fetch | undefined
  /**
   * Told when a request is refused and will be sent once more after a wait (the retry policy
   * above), before the wait: so a user can be told why nothing happens for a while. It changes
   * nothing about the request; a hook that throws is ignored.
   */
  readonly onRetryWait?: ((wait: RetryWait) => void) | undefined
  /**
   * How long one HTTP exchange (sending, the answer's headers and body) may take before it is
   * aborted and fails with code `timeout` (status 0, retryable, not retried by the client: the
   * call may have acted). Default 80000 ms, above the service's 60 s wait of a sync execute;
   * 0 for no deadline of the client's own.
   */
  readonly requestTimeoutMs?: number | undefined
}

export type Method = "GET" | "HEAD" | "POST" | "PATCH" | "DELETE"

export interface Request {
  readonly method: Method
  readonly path: string
  readonly query?: Readonly<Record<string, string | number | undefined>> | undefined
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string | undefined>> | undefined
}

export interface Answer {
  readonly status: number
  readonly body: unknown
  readonly headers: Headers
}

/** When the service gave no delay with its 429, wait this long before the one retry. */
const DEFAULT_RETRY_AFTER_SECONDS = 1
export const DEFAULT_REQUEST_TIMEOUT_MS = 80_000
const RETRIED: ReadonlySet<Method> = new Set<Method>(["GET", "HEAD"])

/** A refusal the service says to retry after a delay: its rate limit, or its store away (503 with a delay). */
const retriedAfterDelay = (error: ServiceError): boolean =>
  error.status === 429 || (error.status === 503 && error.retryable && error.retryAfter !== undefined)

const buildUrl = (baseUrl: string, request: Request): string => {
  const url = new URL(request.path, baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`)
  for (const [name, value] of Object.entries(request.query ?? {})) {
    if (value !== undefined) url.searchParams.set(name, String(value))
  }
  return url.toString()
}

const readBody = (response: Response): Promise<unknown> =>
  response.text().then((text) => {
    if (text === "") return undefined
    try {
      return JSON.parse(text) as unknown
    } catch {
      return text
    }
  })

const failIfError = (response: Answer): Effect.Effect<Answer, ServiceError> =>
  response.status >= 200 && response.status < 300
    ? Effect.succeed(response)
    : Effect.map(Clock.currentTimeMillis, (now) => fromResponse(response.status, response.body, response.headers, now)).pipe(
      Effect.flatMap(Effect.fail)
    )

export const makeTransport = (options: TransportOptions) => {
  const fetchImpl: Fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const tell = (wait: RetryWait): void => {
    try {
      options.onRetryWait?.(wait)
    } catch {
      // The caller's hook never changes what the request does.
    }
  }

  // Whitespace around the key goes, as fetch would drop it (a key file's last line break). A key
  // with a character no header value may hold inside it (a line break, a NUL) would fail in
  // fetch, whose message quotes the header whole: refused here, never quoted.
  const apiKey = options.apiKey.replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "")
  const keyRefused = /[^\t\x20-\x7e\x80-\xff]/.test(apiKey)
    ? unsendable("The API key holds a character an HTTP header cannot carry (a line break or another control character): check how it was read.")
    : undefined

  const timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
  // Interrupting the exchange aborts its fetch (the signal below): the connection is let go.
  const bounded = (request: Request, exchange: Effect.Effect<Answer, ServiceError>): Effect.Effect<Answer, ServiceError> =>
    timeoutMs > 0 && Number.isFinite(timeoutMs)
      ? Effect.timeoutOrElse(exchange, {
        duration: Duration.millis(timeoutMs),
        orElse: () => Effect.fail(timedOut(`${request.method} /${request.path.replace(/^\//, "")} had no answer within ${timeoutMs} ms.`))
      })
      : exchange

  const once = (request: Request): Effect.Effect<Answer, ServiceError> =>
    keyRefused !== undefined ? Effect.fail(keyRefused) : bounded(request, Effect.tryPromise({
      try: async (signal) => {
        const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: "application/json" }
        for (const [name, value] of Object.entries(request.headers ?? {})) if (value !== undefined) headers[name] = value
        const init: RequestInit = { method: request.method, headers, signal }
        if (request.body !== undefined) {
          headers["content-type"] = "application/json"
          init.body = JSON.stringify(request.body)
        }
        const response = await fetchImpl(buildUrl(options.baseUrl, request), init)
        return { status: response.status, body: await readBody(response), headers: response.headers }
      },
      catch: (cause) => networkError(cause, apiKey)
    }))

  /** Sends the request; a 2xx is the answer, anything else a `ServiceError`. */
  const send = (request: Request): Effect.Effect<Answer, ServiceError> =>
    Effect.flatMap(once(request), failIfError).pipe(
      Effect.catchIf(
        (error) => retriedAfterDelay(error) && RETRIED.has(request.method),
        (error) => {
          const seconds = error.retryAfter ?? DEFAULT_RETRY_AFTER_SECONDS
          return Effect.sync(() => tell({ method: request.method, path: `/${request.path.replace(/^\//, "")}`, seconds, error })).pipe(
            Effect.andThen(Effect.sleep(Duration.seconds(seconds))),
            Effect.andThen(Effect.flatMap(once(request), failIfError))
          )
        }
      )
    )

  /** Sends the request and decodes the 2xx body with `schema`. */
  const json = <A>(request: Request, schema: Schema.ConstraintDecoder<A>): Effect.Effect<A, ServiceError> =>
    Effect.flatMap(send(request), (response) =>
      Schema.decodeUnknownEffect(schema)(response.body).pipe(
        Effect.mapError((issue) =>
          new ServiceError({
            status: response.status,
            code: "provider_error",
            message: `The response does not match this client's contract: ${String(issue)}`.slice(0, 1000),
            retryable: false,
            requestId: response.headers.get("request-id") ?? ""
          })
        )
      ))

  return { send, json }
}

export type Transport = ReturnType<typeof makeTransport>
