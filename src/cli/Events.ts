/**
 * `events tail`: follows the event log and prints one JSON line per event. Payloads are printed
 * as stored; the log never holds file bytes or secrets in plain text.
 */
import { Cause, Effect, Option, Redacted, Schedule, Stream } from "effect"
import { Command, Flag } from "effect/cli"
import { comparePositions, EventStore, parsePosition, type Position, START } from "../../infra/eventlog/EventStore.ts"
import { layerPgEventStore } from "../../infra/eventlog/PgEventStore.ts"
import { streamTypes } from "../App.ts"
import { databaseUrl } from "../../infra/Settings.ts"
import { fail, print, withDatabase } from "./Shared.ts"
import { databaseHostOf, describeStartupFailure } from "./StartupFailure.ts"

/** The line a tail whose store went away writes on stderr: why, from the error's causes. */
export const unavailableNote = (error: unknown, databaseHost: string | undefined, last: Position): string =>
  `the store is unavailable (${describeStartupFailure(Cause.fail(error), databaseHost, "failed")}); following again after ${last.tx}:${last.seq} once it answers`

/** How often a tail whose store went away tries again. */
const RETRY_MS = 1_000

const tail = Command.make(
  "tail",
  {
    fromStart: Flag.Boolean("from-start").pipe(
      Flag.withDescription("Start at the first event instead of the newest"),
      Flag.withDefault(false)
    ),
    from: Flag.String("from").pipe(Flag.withDescription("Start after this position (tx:seq)"), Flag.optional),
    streamType: Flag.String("stream-type").pipe(
      Flag.withDescription(`Only events of this stream type, one of: ${streamTypes.join(", ")}`),
      Flag.optional
    )
  },
  ({ fromStart, from, streamType }) => {
    const explicit = Option.getOrUndefined(from)
    const given = explicit === undefined ? undefined : parsePosition(explicit)
    const type = Option.getOrUndefined(streamType)
    // A bad position or stream type is refused before the database is reached; an unknown type
    // (a typo) would otherwise match nothing and print nothing, forever.
    if (explicit !== undefined && given === undefined) return fail("--from takes a position like 731:42")
    if (type !== undefined && !streamTypes.includes(type)) {
      return fail(`--stream-type: unknown stream type ${type}; known: ${streamTypes.join(", ")}`)
    }
    return withDatabase(
      Effect.gen(function*() {
        const store = yield* EventStore
        const url = yield* Effect.orElseSucceed(databaseUrl, () => undefined)
        const host = databaseHostOf(url === undefined ? undefined : Redacted.value(url))
        const start = given ?? (fromStart ? START : yield* store.head)
        // On stderr, so the JSON lines on stdout stay clean: where following starts, and again
        // after the store went away (a Postgres restart), from the last event printed, so
        // nothing is printed twice or skipped.
        const note = (line: string) => Effect.sync(() => void process.stderr.write(`${line}\n`))
        let last: Position = start
        yield* note(`following after ${start.tx}:${start.seq}`)
        // A position past the newest event (a typo, an extra digit) would print nothing, without
        // a word, until the log passes it.
        if (given !== undefined) {
          const head = yield* store.head
          if (comparePositions(given, head) > 0) {
            yield* note(`--from ${given.tx}:${given.seq} is past the newest event (${head.tx}:${head.seq}): nothing prints until the log passes it`)
          }
        }
        yield* Stream.suspend(() => store.follow(last)).pipe(
          Stream.filter((e) => {
            last = e.position
            return type === undefined || e.streamType === type
          }),
          Stream.runForEach((e) =>
            print(JSON.stringify({
              position: `${e.position.tx}:${e.position.seq}`,
              stream: e.streamId,
              version: e.version,
              type: e.type,
              schemaVersion: e.schemaVersion,
              at: new Date(e.createdAt).toISOString(),
              data: e.data
            }))),
          Effect.tapError((error) => note(unavailableNote(error, host, last))),
          Effect.retry(Schedule.spaced(RETRY_MS))
        )
      }).pipe(Effect.provide(layerPgEventStore)),
      { readOnly: true }
    )
  }
).pipe(Command.withDescription("Follow the event log, printing one JSON line per event"))

export const events = Command.make("events").pipe(
  Command.withDescription("Read the event log"),
  Command.withSubcommands([tail])
)
