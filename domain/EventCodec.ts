/**
 * One codec per stream type: how a stream's events go into the log and how they come back.
 *
 * The log hands data back as JSON. Each stream's events are one Schema union, decoded here and
 * nowhere else, so no reader casts event data, and an event that does not match its stream's
 * schema fails at once with an error naming its stream and type, rather than later as a missing
 * field. Encoding is the identity: the event types derive from their Schemas (type aliases, which
 * TypeScript checks against `Schema.Json`, where interfaces are not), so an event is a JSON value
 * as it stands and the append path copies nothing.
 *
 * Decoding is not free: an execution's terminal event (its record inside) takes about 1.0-1.2 us
 * here, a request 0.6 us. The executions projection reads every execution event as it is
 * appended, and decoding there took the engine in memory (bench/engine.ts, 128 fibers) from 30 to
 * 33-37 us of CPU per execution (four alternating pairs). But what a projection reads at append
 * time, and what the memory store hands back, is the very object this process just encoded: the
 * codec remembers recent ones (`recentlyWritten`) and answers them without a parse (0.05-0.1 us
 * for an encode and a decode together), which put the engine back within its noise (medians 30.9
 * before and 31.9 us after, six alternating pairs on a busy machine). Readers decode only the
 * stream types they handle, with the default parse options (any option moves Schema's struct
 * parser off its fast path; unknown keys are dropped either way).
 */
import { Result, Schema } from "effect"
import { isJsonObject } from "./JsonObject.ts"

/** An event as the log takes it (the event store's `NewEvent`). */
export interface EncodedEvent {
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: Schema.Json
}

/** What decoding reads of a recorded event (the event store's `RecordedEvent` has all of it). */
export interface StoredEvent {
  readonly streamId: string
  readonly type: string
  readonly data: Schema.Json
}

/** A recorded event that its stream's schema refuses: the log holds something this code never wrote. */
export class EventDecodeError extends Error {
  override readonly name = "EventDecodeError"
  readonly streamType: string
  readonly streamId: string
  readonly eventType: string
  constructor(streamType: string, event: StoredEvent, detail: string) {
    super(`event ${event.type} of stream ${event.streamId} (type ${streamType}) does not decode: ${detail}`)
    this.streamType = streamType
    this.streamId = event.streamId
    this.eventType = event.type
  }
}

export interface StreamCodec<E extends { readonly type: string }> {
  readonly streamType: string
  /** The event as the log stores it, under `eventId`. */
  readonly encode: (event: E, eventId: string) => EncodedEvent
  /** A recorded event of this stream type; throws `EventDecodeError` when it does not match. */
  readonly decode: (event: StoredEvent) => E
}

/** The schema version every event is written with today. */
const SCHEMA_VERSION = 1

type JsonEvent = Schema.JsonObject & { readonly type: string }

/** Entries per generation of `recentlyWritten`: more than the appends of several group commits. */
const RECENT = 4096

/**
 * The data this process encoded lately, each with its typed event, in two generations of at most
 * RECENT entries (the older dropped whole when the newer fills). The log hands those very objects
 * back right away (inline projections, the memory store), and decoding them again would only copy
 * them; data from elsewhere, or older, is decoded. The maps are weak, so they never keep an event
 * (an output may be a megabyte) that the log has let go; and generations, because the memory
 * store keeps every event, so one map over all of them would only grow.
 */
const recentlyWritten = <E>() => {
  let current = new WeakMap<object, E>()
  let previous = new WeakMap<object, E>()
  let size = 0
  return {
    add: (data: object, event: E) => {
      if (size >= RECENT) {
        previous = current
        current = new WeakMap()
        size = 0
      }
      current.set(data, event)
      size++
    },
    get: (data: Schema.Json): E | undefined =>
      typeof data === "object" && data !== null ? current.get(data) ?? previous.get(data) : undefined
  }
}

const makeCodec = <E extends JsonEvent>(
  streamType: string,
  schema: Schema.Codec<E, E>,
  dataOf: (event: E) => Schema.JsonObject,
  inputOf: (stored: StoredEvent) => unknown
): StreamCodec<E> => {
  const parse = Schema.decodeUnknownResult(schema)
  const written = recentlyWritten<E>()
  return {
    streamType,
    encode: (event, eventId) => {
      const data = dataOf(event)
      written.add(data, event)
      return { eventId, type: event.type, schemaVersion: SCHEMA_VERSION, data }
    },
    decode: (stored) => {
      const known = written.get(stored.data)
      if (known !== undefined && known.type === stored.type) return known
      const result = parse(inputOf(stored))
      if (Result.isFailure(result)) throw new EventDecodeError(streamType, stored, result.failure.message)
      if (result.success.type !== stored.type) {
        throw new EventDecodeError(streamType, stored, `its data names the type ${result.success.type}`)
      }
      return result.success
    }
  }
}

/** A stream whose event data carries its own `type` (the event is the data). */
export const streamCodec = <E extends JsonEvent>(streamType: string, schema: Schema.Codec<E, E>): StreamCodec<E> =>
  makeCodec(streamType, schema, (event) => event, (stored) => stored.data)

/**
 * A stream whose event data leaves the type to the log's envelope (streams written before the
 * events had schemas): the type is taken out on the way in and put back on the way out.
 */
export const envelopeTypedStreamCodec = <E extends JsonEvent>(streamType: string, schema: Schema.Codec<E, E>): StreamCodec<E> =>
  makeCodec(
    streamType,
    schema,
    (event) => {
      const { type: _, ...data } = event
      return data
    },
    (stored) => {
      if (!isJsonObject(stored.data)) throw new EventDecodeError(streamType, stored, "its data is not an object")
      return { ...stored.data, type: stored.type }
    }
  )
