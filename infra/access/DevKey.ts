/**
 * The development key (decisions.md section 1): in memory mode with no configured key, start-up
 * creates one unpinned key for project `proj_dev` and prints it once, so that `npm start` is
 * usable at once. Such a service listens on loopback unless SERVICE_HOST says otherwise.
 * The key is made and shown once the server listens (it asks for the HttpServer), so a start-up
 * that fails, on a busy port say, hands out no key for a service that never ran.
 */
import { Clock, Effect, Layer, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { currentLogFormat, isoTime } from "../observability/Logging.ts"
import { databaseUrl, raw } from "../Settings.ts"
import { bootstrapKeys } from "./AccessSettings.ts"
import { ApiKeys } from "./ApiKeys.ts"

/** True when start-up makes the development key: memory mode and no SERVICE_API_KEYS. */
export const devKeyWanted = Effect.gen(function*() {
  return (yield* databaseUrl) === undefined && (yield* bootstrapKeys).length === 0
})

/**
 * The listen address: SERVICE_HOST, else loopback when start-up makes the development key (a key
 * printed to a terminal must not open the service to the network), else every interface.
 */
export const listenHost = Effect.gen(function*() {
  return (yield* raw("SERVICE_HOST")) ?? ((yield* devKeyWanted) ? "127.0.0.1" : "0.0.0.0")
})

const DEV_PROJECT = "proj_dev"
const ABOUT = "memory mode; a new one at every start, shown once"

/**
 * Shows the key once the server listens: under SERVICE_LOG_FORMAT=json as one JSON object like
 * every other line (`{"time","level","message","projectId","apiKey"}`), else as plain text.
 */
export const layer = Layer.effectDiscard(
  Effect.gen(function*() {
    yield* HttpServer.HttpServer
    const keys = yield* ApiKeys
    if (!(yield* devKeyWanted)) {
      // With a database and no key anywhere, every request is a 401: say what to do about it.
      if ((yield* databaseUrl) !== undefined && (yield* bootstrapKeys).length === 0) {
        // A store that cannot list them now gives no hint rather than a wrong one.
        const listed = yield* Effect.option(keys.list())
        if (listed._tag === "Some" && !listed.value.some((key) => key.revokedAt === undefined)) {
          yield* Effect.logWarning("no API key exists yet: every request is refused (401) until one does; create one with `npm run -s cli -- keys create --project <id>`")
        }
      }
      return
    }
    const { key } = yield* Effect.orDie(keys.create({ projectId: DEV_PROJECT }))
    // Written as the log lines are (SERVICE_LOG_FORMAT), but not through the logger: its
    // redaction would hide the very key this line is for.
    const format = yield* currentLogFormat
    const time = isoTime(new Date(yield* Clock.currentTimeMillis))
    process.stdout.write(format === "json"
      ? `${JSON.stringify({ time, level: "info", message: `development API key for project ${DEV_PROJECT} (${ABOUT})`, projectId: DEV_PROJECT, apiKey: Redacted.value(key) })}\n`
      : `Development API key for project ${DEV_PROJECT} (${ABOUT}): ${Redacted.value(key)}\n`)
  })
)
