/**
 * Why the service did not start, in one line (decisions.md section 9): a database that does not
 * answer or does not exist, a port already taken, a schema from a newer version, a secret key
 * that does not open the data. An operator reads the first line of a failed start; a stack of
 * fibers and causes there hides the one fact that matters.
 */
import { Cause, Effect, Redacted } from "effect"
import { redactText } from "../../infra/observability/Logging.ts"
import { databaseUrl } from "../../infra/Settings.ts"

/**
 * Prints `error: <line>` on stderr and exits 1. The line passes the logs' redaction: a key
 * (`sk_…`) or signing secret pasted into the wrong variable is quoted by its prefix only.
 */
export const fail = (line: string): Effect.Effect<never> =>
  Effect.sync(() => {
    process.stderr.write(`error: ${redactText(line)}\n`)
    process.exit(1)
  })

interface ErrorLike {
  readonly _tag?: unknown
  readonly code?: unknown
  readonly message?: unknown
  readonly cause?: unknown
  readonly reason?: unknown
  readonly address?: unknown
  readonly port?: unknown
  readonly errors?: unknown
  readonly syscall?: unknown
  readonly hostname?: unknown
}

const asObject = (value: unknown): ErrorLike | undefined => (typeof value === "object" && value !== null ? value as ErrorLike : undefined)

/** The error and every cause below it (`cause`, `reason`, an AggregateError's `errors`), outermost first. */
const chain = (error: unknown): ReadonlyArray<ErrorLike> => {
  const found: Array<ErrorLike> = []
  const visit = (value: unknown, depth: number) => {
    const object = asObject(value)
    if (object === undefined || depth > 8 || found.includes(object)) return
    found.push(object)
    visit(object.reason, depth + 1)
    visit(object.cause, depth + 1)
    if (Array.isArray(object.errors)) for (const inner of object.errors) visit(inner, depth + 1)
  }
  visit(error, 0)
  return found
}

const firstLine = (value: unknown): string => String(value ?? "").split("\n", 1)[0] ?? ""

const DATABASE_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ECONNRESET: "connection reset"
}

/** Postgres SQLSTATEs a start meets when the database is not what SERVICE_DATABASE_URL says. */
const POSTGRES_CODES: Readonly<Record<string, string>> = {
  "3D000": "the database does not exist",
  "28P01": "authentication failed",
  "28000": "authentication failed",
  "57P03": "the server is starting up or shutting down",
  "53300": "too many connections"
}

/** Whether `hostname` is the host of the database (`databaseHost` is `host:port/path`). */
const isDatabaseHost = (hostname: string, databaseHost: string | undefined) =>
  databaseHost !== undefined && (databaseHost.startsWith(`${hostname}:`) || databaseHost.startsWith(`[${hostname}]:`))

export const describeStartupFailure = (cause: Cause.Cause<unknown>, databaseHost: string | undefined, what = "start-up failed"): string => {
  const reasons = cause.reasons.flatMap((reason) =>
    Cause.isFailReason(reason) ? [reason.error] : Cause.isDieReason(reason) ? [reason.defect] : []
  )
  const errors = reasons.flatMap(chain)
  for (const error of errors) {
    if (error._tag === "SchemaTooNew" || error._tag === "SchemaBehind" || error._tag === "SecretKeyMismatch" || error._tag === "ConfigInvalid") return firstLine(error.message)
  }
  for (const error of errors) {
    if (error.code === "EADDRINUSE") return `SERVICE_PORT: port ${String(error.port ?? "")} on ${String(error.address ?? "")} is already in use`
    if (error.code === "EACCES" && error.port !== undefined) return `SERVICE_PORT: no permission to listen on port ${String(error.port)}`
    if (error.code === "EADDRNOTAVAIL") return `SERVICE_HOST: ${String(error.address ?? "")} is not an address of this machine`
    // A name lookup of a host other than the database's: the listen address.
    if (error.syscall === "getaddrinfo" && typeof error.hostname === "string" && !isDatabaseHost(error.hostname, databaseHost)) {
      return `SERVICE_HOST: ${error.hostname} names no host (${DATABASE_CODES[String(error.code)] ?? String(error.code)})`
    }
  }
  for (const error of errors) {
    const code = typeof error.code === "string" ? error.code : undefined
    if (code === undefined) continue
    const where = databaseHost === undefined ? "" : ` at ${databaseHost}`
    if (code in DATABASE_CODES) return `SERVICE_DATABASE_URL: the database${where} is unreachable (${DATABASE_CODES[code]})`
    if (code in POSTGRES_CODES) return `SERVICE_DATABASE_URL: ${POSTGRES_CODES[code]}${where}: ${firstLine(error.message)}`
    // Any other SQLSTATE: a statement of the start (a migration, say) that Postgres refused.
    if (SQLSTATE.test(code)) return `SERVICE_DATABASE_URL: the database${where} refused a statement: ${firstLine(error.message)} (SQLSTATE ${code})`
  }
  // The Postgres client's own failure (a server that does not answer in time, or does not speak
  // Postgres): what it said, and what it found below, under the variable that points there.
  const client = errors.find((error) => typeof error.message === "string" && error.message.startsWith(PG_CLIENT))
  if (client !== undefined) {
    const said = firstLine(client.message).slice(PG_CLIENT.length)
    const below = errors.slice(errors.indexOf(client) + 1).map((error) => firstLine(error.message)).find((m) => m !== "" && m !== said && !m.startsWith(PG_CLIENT))
    const where = databaseHost === undefined ? "" : ` at ${databaseHost}`
    return `SERVICE_DATABASE_URL: the database${where} failed: ${said}${below === undefined ? "" : ` (${below})`}`
  }
  const first = errors[0]
  return `${what}: ${firstLine(first?.message ?? Cause.pretty(cause))}`
}

/** A Postgres error code (SQLSTATE): five digits or capitals, a digit among them (Node's codes, EPIPE, have none). */
const SQLSTATE = /^(?=.*\d)[0-9A-Z]{5}$/
/** How the Postgres client's messages begin. */
const PG_CLIENT = "PgConnection: "

/** The host and port of a database URL, without its credentials. */
export const databaseHostOf = (url: string | undefined): string | undefined => {
  if (url === undefined || !URL.canParse(url)) return undefined
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
}

/**
 * A failed start (or operator command: `what` names it) ends the process with its one line on
 * stderr and exit code 1.
 */
export const reportingStartup = <A, E, R>(effect: Effect.Effect<A, E, R>, what?: string): Effect.Effect<A, E, R> =>
  Effect.catchCause(effect, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.flatMap(Effect.orElseSucceed(databaseUrl, () => undefined), (url) =>
        fail(describeStartupFailure(cause, databaseHostOf(url === undefined ? undefined : Redacted.value(url)), what))))
