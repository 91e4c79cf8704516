/**
 * Reading configuration where it is used (decisions.md section 1). Values come through Effect's
 * `Config` from the current `ConfigProvider` (the process environment by default; tests give a
 * record with `ConfigProvider.fromEnvRecord`). Each reader validates its variable and fails with
 * a `ConfigInvalid` whose message is one line naming it, which the command line prints as is.
 *
 * A blank value counts as unset, so `SERVICE_X=` in a shell means the default.
 */
import { Config, Effect, Option, Redacted, Schema } from "effect"
import { CHOSEN_ID } from "../domain/Ids.ts"

/** One bad variable: `variable` names it, `reason` says what was expected. */
export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  variable: Schema.String,
  reason: Schema.String
}) {
  // Redacted here too, for a refusal made elsewhere than `invalid` (below).
  override get message() {
    return `${this.variable}: ${redactUrlSecrets(this.reason)}`
  }
}

/**
 * `text` without the credentials of a URL in it: whatever lies between the first "//" and the
 * last "@" (a password, a token given as the user name, whatever characters they hold) becomes
 * `[redacted]`, and so does a query (`?api_key=…`) up to the closing quote. A value refused for
 * not being a URL cannot be parsed to find its credentials, so this hides more than a URL parser
 * would call credentials (a path with an "@" loses its host), never less.
 */
export const redactUrlSecrets = (text: string): string => text.replace(/\/\/.*@/s, "//[redacted]@").replace(/(\/\/[^"]*\?)[^"]*/g, "$1[redacted]")

type Setting<A> = Effect.Effect<A, ConfigInvalid>

/** The refusal, its reason (which may quote the value) without a URL's credentials. */
const invalid = (variable: string, reason: string) => Effect.fail(new ConfigInvalid({ variable, reason: redactUrlSecrets(reason) }))

/** The variable's trimmed value, or undefined when it is unset or blank. */
export const raw = (name: string): Setting<string | undefined> =>
  Effect.map(Config.option(Config.String(name)), (value) => {
      const text = Option.getOrUndefined(value)?.trim()
      return text === undefined || text === "" ? undefined : text
  }).pipe(Effect.catch(() => invalid(name, "could not be read")))

/** What a parser answers for a value it refuses. */
export class Rejected {
  readonly reason: string
  constructor(reason: string) {
    this.reason = reason
  }
}

const reason = (text: string) => new Rejected(text)

/** Custom parsing: `parse` answers the value, or a `Rejected` saying what was expected. */
export const parsed = <A>(name: string, parse: (value: string | undefined) => A | Rejected): Setting<A> =>
  Effect.flatMap(raw(name), (value) => {
    const result = parse(value)
    return result instanceof Rejected ? invalid(name, result.reason) : Effect.succeed(result)
  })

const withRaw = parsed

export const integer = (name: string, fallback: number, min: number, max: number = Number.MAX_SAFE_INTEGER): Setting<number> =>
  withRaw(name, (value) => {
    if (value === undefined) return fallback
    const n = Number(value)
    return /^\d+$/.test(value) && Number.isSafeInteger(n) && n >= min && n <= max
      ? n
      : reason(`expected an integer from ${min} to ${max}, got "${value}"`)
  })

export const boolean = (name: string, fallback: boolean): Setting<boolean> =>
  withRaw(name, (value) => {
    if (value === undefined) return fallback
    const lower = value.toLowerCase()
    if (lower === "true" || lower === "1" || lower === "yes") return true
    if (lower === "false" || lower === "0" || lower === "no") return false
    return reason(`expected true or false (also 1 or 0, yes or no), got "${value}"`)
  })

/** An http(s) URL without a trailing slash. */
export const httpUrl = (name: string, fallback: string): Setting<string> =>
  withRaw(name, (value) => {
    if (value === undefined) return fallback
    const bad = reason(`expected an http(s) URL, got "${value}"`)
    if (!URL.canParse(value)) return bad
    const url = new URL(value)
    if (url.protocol !== "http:" && url.protocol !== "https:") return bad
    // It is written into URLs the service hands out (ingest URLs): credentials have no place there.
    if (url.username !== "" || url.password !== "") return reason(`must not contain user info, got "${value}"`)
    // A base URL: paths are appended to it. A query would carry a token the logs quote.
    if (url.search !== "" || url.hash !== "" || value.includes("?") || value.includes("#")) return reason("must not contain a query or a fragment (put credentials in headers)")
    return value.replace(/\/+$/, "")
  })

export const oneOf = <const L extends string>(name: string, values: ReadonlyArray<L>, fallback: L): Setting<L> =>
  withRaw(name, (value) => {
    if (value === undefined) return fallback
    const found = values.find((candidate) => candidate === value)
    return found ?? reason(`expected ${values.map((v) => `"${v}"`).join(" or ")}, got "${value}"`)
  })


/** A project or user id as decisions.md section 1 allows them, or undefined. */
export const optionalId = (name: string): Setting<string | undefined> =>
  withRaw(name, (value) => (value === undefined || CHOSEN_ID.test(value) ? value : reason("expected [A-Za-z0-9_.-]{1,64}")))

export const isId = (value: string) => CHOSEN_ID.test(value)

/** A comma-separated list of trimmed, non-empty items. */
export const list = (name: string): Setting<ReadonlyArray<string>> =>
  withRaw(name, (value) => value === undefined ? [] : value.split(",").map((item) => item.trim()).filter((item) => item !== ""))

/** The database URL, or undefined for memory mode. */
export const databaseUrl: Setting<Redacted.Redacted<string> | undefined> = withRaw("SERVICE_DATABASE_URL", (value) => {
  if (value === undefined) return undefined
  const bad = reason("expected a postgres:// URL")
  if (!URL.canParse(value)) return bad
  const protocol = new URL(value).protocol
  return protocol === "postgres:" || protocol === "postgresql:" ? Redacted.make(value) : bad
})
