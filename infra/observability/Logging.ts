/**
 * How the service writes its logs (decisions.md section 9): one line per entry on stdout, as a
 * JSON object (`SERVICE_LOG_FORMAT=json`, the default when stdout is not a terminal, so that a
 * log shipper reads it as is) or as text for a person (`pretty`, the default on a terminal).
 *
 * Why a logger of our own rather than Effect's console loggers: every line passes one redaction
 * step (credentials in URLs, the ingest path's secret, keys and signing secrets that a message
 * or a cause might quote), structured fields become top-level JSON fields (a request line is
 * `{"level":"info","message":"request","method":"GET","route":"/v1/me",…}`), and lines are
 * written together at the end of the event loop's turn: one write per turn instead of one per
 * line under load. The buffer is flushed synchronously when the process exits.
 */
import { Cause, Effect, Layer, Logger, References } from "effect"
import { oneOf } from "../Settings.ts"

export type LogFormat = "json" | "pretty"

/** SERVICE_LOG_FORMAT: `json` or `pretty`; by default pretty on a terminal, JSON elsewhere. */
export const logFormat = oneOf<LogFormat>("SERVICE_LOG_FORMAT", ["json", "pretty"], process.stdout.isTTY === true ? "pretty" : "json")

/** Field names whose values are never written. */
const SECRET_FIELD = /authorization|secret|password|passwd|token|credential|api[_-]?key|cookie/i

const REDACTED = "[redacted]"

/** Query parameter names that carry credentials (`access_token`, `api_key`, `sig`, `X-Amz-Signature`…). */
const SECRET_PARAMETER = /token|secret|pass|sig|key|auth|credential|session/i

/**
 * What a line may quote that must not be written: a password in a URL, the secret segment of an
 * ingest path, API keys (`sk_…`) and webhook signing secrets (`whsec_…`) past their prefix (which
 * are base64url: `_` and `-` may come anywhere), bearer tokens, and the values of query
 * parameters named like credentials.
 */
const SECRET_TEXT: ReadonlyArray<readonly [RegExp, string | ((match: string, ...groups: Array<string>) => string)]> = [
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@"]+:)[^\s@/"]+@/gi, `$1${REDACTED}@`],
  // The route template's `:secret` placeholder is no secret: request lines name the route as
  // the metrics do (`/v1/ingest/:subscriptionId/:secret`).
  [/(\/v1\/ingest\/[^/\s"?]+\/)(?!:secret(?![^/\s"?]))[^/\s"?]+/g, `$1${REDACTED}`],
  // Its first segment is the caller's too: written only when it is a subscription id's shape.
  [/(\/v1\/ingest\/)(?!(?:trgsub_[A-Za-z0-9]+|:subscriptionId)(?![^/\s"?]))[^/\s"?]+/g, `$1${REDACTED}`],
  [/\b(sk_[A-Za-z0-9_-]{4})[A-Za-z0-9_-]+/g, `$1…${REDACTED}`],
  [/\b(whsec_[A-Za-z0-9_+/=-]{4})[A-Za-z0-9_+/=-]+/g, `$1…${REDACTED}`],
  [/(\bBearer\s+)[^\s"]+/gi, `$1${REDACTED}`],
  // The name is judged apart: one pattern with it inside would backtrack over a long line.
  [/([?&][^=&?\s"#]*=)[^&\s"#]+/g, (match, name) => (SECRET_PARAMETER.test(name) ? `${name}${REDACTED}` : match)]
]

/** A cheap test first: most lines quote nothing that needs redaction. */
const MAYBE_SECRET = /:\/\/|\/v1\/ingest\/|sk_|whsec_|bearer|[?&][^=&?\s"#]*=/i

export const redactText = (text: string): string => {
  if (!MAYBE_SECRET.test(text)) return text
  let result = text
  for (const [pattern, replacement] of SECRET_TEXT) {
    result = typeof replacement === "string" ? result.replace(pattern, replacement) : result.replace(pattern, replacement)
  }
  return result
}

/**
 * A telemetry record (OTLP logs, spans, metrics) through the same step: every string redacted as
 * a line is, and the value of an attribute (`{key, value}`) named like a secret replaced.
 */
export const redactDeep = <A>(value: A): A => {
  if (typeof value === "string") return redactText(value) as A
  if (Array.isArray(value)) return value.map(redactDeep) as A
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return value
  const record = value as Record<string, unknown>
  if (typeof record.key === "string" && "value" in record && fieldName(record.key).secret) return { ...record, value: { stringValue: REDACTED } } as A
  const copy: Record<string, unknown> = {}
  for (const key in record) copy[key] = redactDeep(record[key])
  return copy as A
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype

/**
 * What is known of a field name: whether its value is secret, and the name as JSON. Field names
 * come from the code and repeat on every line (a request line has five), so each is judged once;
 * past MAX_NAMES distinct names (annotations that carry data in their names) they are judged
 * every time instead, so the memo cannot grow without bound.
 */
interface FieldName {
  readonly secret: boolean
  readonly json: string
}

const MAX_NAMES = 1_000
const names = new Map<string, FieldName>()

const fieldName = (key: string): FieldName => {
  const known = names.get(key)
  if (known !== undefined) return known
  const judged = { secret: SECRET_FIELD.test(key), json: JSON.stringify(key) }
  if (names.size < MAX_NAMES) names.set(key, judged)
  return judged
}

const fieldValue = (key: string, value: unknown): unknown => {
  if (fieldName(key).secret) return REDACTED
  if (value instanceof Error) return value.message
  if (typeof value === "bigint") return value.toString()
  return value
}

/**
 * An entry as one flat record: the first text of the message is `message`, plain objects among
 * its parts become fields, anything else is kept under `details`.
 */
export interface LogRecord {
  readonly time: string
  readonly level: string
  readonly message: string
  readonly fields: Record<string, unknown>
  readonly cause: string | undefined
}

/** How many causes deep a chain of messages goes (a chain may loop). */
const CHAIN_DEPTH = 5

/**
 * An expected failure in one short line: its tag (or name) and message, then its cause's, and so
 * on (`StoreUnavailable; cause: SqlError: PgConnection: Failed to connect; cause: Error: connect
 * ECONNREFUSED …`). A stack says nothing about a database that went away, and an outage repeats
 * the line every few seconds.
 */
export const describeFailure = (error: unknown): string => {
  const links: Array<string> = []
  let current = error
  let previous: unknown
  for (let depth = 0; depth < CHAIN_DEPTH && current !== undefined && current !== null; depth++) {
    if (typeof current !== "object") {
      links.push(String(current))
      break
    }
    const { _tag, name, message, cause } = current as { _tag?: unknown; name?: unknown; message?: unknown; cause?: unknown }
    const label = typeof _tag === "string" ? _tag : typeof name === "string" ? name : "Error"
    // A wrapper that repeats its cause's message (the Postgres client's errors do) adds nothing.
    if (message !== previous) links.push(typeof message === "string" && message !== "" ? `${label}: ${message}` : label)
    previous = message
    current = cause
  }
  return links.join("; cause: ")
}

/**
 * A cause as logged: expected failures as their short chains; anything with a defect (a bug)
 * or an interruption whole, stacks included.
 */
const describeCause = (cause: Cause.Cause<unknown>): string | undefined => {
  if (cause.reasons.length === 0) return undefined
  if (!cause.reasons.every(Cause.isFailReason)) return Cause.pretty(cause)
  return cause.reasons.map((reason) => describeFailure(reason.error)).join("\n")
}

export const toRecord = (options: Logger.Options<unknown>): LogRecord => {
  const parts = Array.isArray(options.message) ? options.message : [options.message]
  const fields: Record<string, unknown> = {}
  let message: string | undefined
  const details: Array<unknown> = []
  for (const part of parts) {
    if (message === undefined && typeof part === "string") message = part
    else if (isPlainObject(part)) for (const key in part) fields[key] = fieldValue(key, part[key])
    else if (part instanceof Error) details.push(describeFailure(part))
    else if (part !== undefined) details.push(part)
  }
  const annotations = options.fiber.getRef(References.CurrentLogAnnotations)
  for (const key in annotations) if (!(key in fields)) fields[key] = fieldValue(key, annotations[key])
  if (details.length > 0) fields.details = details.length === 1 ? details[0] : details
  return {
    time: isoTime(options.date),
    level: options.logLevel.toLowerCase(),
    message: message ?? "",
    fields,
    cause: describeCause(options.cause)
  }
}

let cachedSecond = Number.NaN
let cachedPrefix = ""

/**
 * `date.toISOString()`, for less: the text up to the second is made once a second (a line per
 * request made it a measurable part of a request's cost), then the milliseconds are appended.
 */
export const isoTime = (date: Date): string => {
  const ms = date.getTime()
  const second = Math.floor(ms / 1000)
  if (second !== cachedSecond) {
    // Years past 9999 (or before 0) are written with six digits and a sign: leave those whole.
    if (!(ms >= 0 && ms < 253_402_300_800_000)) return date.toISOString()
    cachedSecond = second
    cachedPrefix = date.toISOString().slice(0, 20)
  }
  const fraction = ms - second * 1000
  return `${cachedPrefix}${fraction < 10 ? "00" : fraction < 100 ? "0" : ""}${fraction}Z`
}

/** JSON of a value; one holding a bigint somewhere below is written with it as a string. */
const safeJson = (value: unknown): string => {
  // Most fields are numbers (status, durations, counts): JSON writes a finite one as String does.
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null"
  try {
    return JSON.stringify(value) ?? "null"
  } catch {
    return JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString() : inner)) ?? "null"
  }
}

/** The line built field by field: no intermediate object per line. */
export const formatJsonLine = (record: LogRecord): string => {
  let line = `{"time":"${record.time}","level":"${record.level}","message":${JSON.stringify(record.message)}`
  for (const key in record.fields) line += `,${fieldName(key).json}:${safeJson(record.fields[key])}`
  if (record.cause !== undefined) line += `,"cause":${JSON.stringify(record.cause)}`
  return redactText(`${line}}`)
}

const LEVEL_WIDTH = 5

const pretty = (value: unknown): string => {
  if (typeof value === "string") return /[\s"=]/.test(value) ? JSON.stringify(value) : value
  return typeof value === "object" && value !== null ? safeJson(value as Record<string, unknown>) : String(value)
}

export const formatPrettyLine = (record: LogRecord): string => {
  let line = `${record.time} ${record.level.toUpperCase().padEnd(LEVEL_WIDTH)} ${record.message}`
  for (const key in record.fields) line += ` ${key}=${pretty(record.fields[key])}`
  if (record.cause !== undefined) line += `\n  ${record.cause.split("\n").join("\n  ")}`
  return redactText(line)
}

/**
 * A writer of lines to `stream`: lines wait for the end of the turn and are written together, in
 * order; what is waiting is flushed synchronously when the process exits.
 */
const makeWriter = (stream: NodeJS.WriteStream) => {
  let pending: Array<string> = []
  let scheduled = false
  let exitHooked = false
  const flush = (): void => {
    scheduled = false
    if (pending.length === 0) return
    const text = pending.join("")
    pending = []
    stream.write(text)
  }
  return (line: string): void => {
    pending.push(`${line}\n`)
    if (!exitHooked) {
      exitHooked = true
      process.once("exit", flush)
    }
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }
}

const writers = { stdout: makeWriter(process.stdout), stderr: makeWriter(process.stderr) }

/** The logger of `format`, writing to stdout (or stderr, for commands whose stdout is data). */
export const lineLogger = (format: LogFormat, to: keyof typeof writers = "stdout"): Logger.Logger<unknown, void> => {
  const write = writers[to]
  return Logger.make((options) => write((format === "json" ? formatJsonLine : formatPrettyLine)(toRecord(options))))
}

/**
 * The format lines are written in: a bad SERVICE_LOG_FORMAT falls back to the default here; the
 * preflight (src/Preflight.ts) reports it as one line and stops.
 */
export const currentLogFormat: Effect.Effect<LogFormat> = logFormat.pipe(
  Effect.orElseSucceed((): LogFormat => (process.stdout.isTTY === true ? "pretty" : "json"))
)

/** The service's loggers in place of Effect's default one. */
export const layerTo = (to: "stdout" | "stderr"): Layer.Layer<never> =>
  Layer.unwrap(Effect.map(currentLogFormat, (format) => Logger.layer([lineLogger(format, to)])))

/** The service's logs, on stdout. */
export const layer: Layer.Layer<never> = layerTo("stdout")
