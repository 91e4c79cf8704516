/**
 * Reading a request's body once, at the edge, with a byte ceiling enforced while it streams in
 * (Node's request read directly in the common case), and the request handed on with that body
 * already read, so that the API decodes the same bytes without reading the stream again.
 */
import { Effect, Stream } from "effect"
import type { HttpServerRequest } from "effect/http"
import { isAscii } from "node:buffer"
import { IncomingMessage } from "node:http"
import { type EdgeFailure, malformedBody } from "./Envelope.ts"

/** A body past this many bytes is handled in steps with other requests served between them. */
export const LARGE_BODY = 1024 * 1024

/**
 * What a body read ends with besides the body: longer than the limit (`undefined`), broken off
 * (`null`), or the refusal of a fault on the connection (Node's request timeout, bytes that are no
 * HTTP).
 */
export type BodyOutcome = Buffer | undefined | null | EdgeFailure

/**
 * The bodies being read, by request: a fault Node reports on the connection (a `clientError`)
 * ends the read with its refusal, so that the request answers it under its own id, and logs it.
 */
const reading = new WeakMap<IncomingMessage, (failure: EdgeFailure) => void>()

/**
 * Ends the read of the body of `message` with `failure`: true when its body was being read (the
 * request then answers it), false when there is none to end.
 */
export const endBody = (message: IncomingMessage, failure: EdgeFailure): boolean => {
  const end = reading.get(message)
  if (end === undefined) return false
  end(failure)
  return true
}

/**
 * Reads at most `limit` bytes: the body, `undefined` when it is longer, `null` when the request
 * broke off, a refusal when the connection had a fault first (endBody).
 */
export const readLimited = (request: HttpServerRequest.HttpServerRequest, limit: number): Effect.Effect<BodyOutcome> => {
  const source = (request as { readonly source?: unknown }).source
  return source instanceof IncomingMessage
    ? Effect.andThen(
      // A client that sent `Expect: 100-continue` waits for this before it sends the body.
      Effect.sync(() => (request as { readonly writeContinue?: () => void }).writeContinue?.()),
      readIncoming(source, limit)
    )
    : readStream(request, limit).pipe(Effect.orElseSucceed(() => null))
}

/** The body's declared length when it is a plain number within `limit`, else undefined. */
const declaredLength = (message: IncomingMessage, limit: number): number | undefined => {
  const header = message.headers["content-length"]
  const length = header === undefined || !/^\d{1,15}$/.test(header) ? Number.NaN : Number(header)
  return Number.isSafeInteger(length) && length <= limit ? length : undefined
}

/**
 * Node's request read directly (the common case): no stream adapter per request. A body of
 * declared length is copied into one buffer chunk by chunk as it arrives, so that a large one (a
 * 35 MB upload) costs no single copy of tens of milliseconds at its end, on the loop every
 * project shares.
 */
const readIncoming = (message: IncomingMessage, limit: number) =>
  Effect.callback<BodyOutcome>((resume) => {
    // The connection closed while the request waited (its key or token checked against the
    // store): Node destroyed the request then, and its `close` and `error` will not come again.
    if (message.destroyed) return resume(Effect.succeed(null))
    // Allocated when the first bytes come: a client that declares a size and sends nothing
    // holds no buffer.
    let declared = declaredLength(message, limit)
    let whole: Buffer | undefined
    let chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      reading.delete(message)
      message.off("data", onData)
      message.off("end", onEnd)
      message.off("error", onError)
      message.off("close", onError)
    }
    const onData = (chunk: Buffer) => {
      const at = size
      size += chunk.length
      if (size > limit) {
        cleanup()
        message.pause()
        return resume(Effect.succeed(undefined))
      }
      if (declared !== undefined) {
        whole = Buffer.allocUnsafe(declared)
        declared = undefined
      }
      if (whole === undefined) return void chunks.push(chunk)
      if (size <= whole.length) return void chunk.copy(whole, at)
      // More than was declared (Node's parser does not let that through): collected instead.
      chunks = [whole.subarray(0, at), chunk]
      whole = undefined
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(whole === undefined ? Buffer.concat(chunks, size) : whole.subarray(0, size)))
    }
    const onError = () => {
      cleanup()
      resume(Effect.succeed(null))
    }
    reading.set(message, (failure) => {
      cleanup()
      message.pause()
      resume(Effect.succeed(failure))
    })
    message.on("data", onData)
    message.on("end", onEnd)
    message.on("error", onError)
    // A connection that closes before the end of the body: nothing more is coming.
    message.on("close", onError)
    return Effect.sync(cleanup)
  })

const readStream = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let size = 0
    return request.stream.pipe(
      Stream.runForEachWhile((chunk) =>
        Effect.sync(() => {
          size += chunk.length
          if (size > limit) return false
          chunks.push(chunk)
          return true
        })
      ),
      Effect.map(() => (size > limit ? undefined : Buffer.concat(chunks, size)))
    )
  })

const BODY = Symbol("app/http/Edge/body")

interface Buffered {
  readonly [BODY]: { readonly bytes: Uint8Array; readonly text: string }
}

/** One decoder for every request: `decode` without `stream` keeps no state between calls. */
const strictUtf8 = new TextDecoder("utf-8", { fatal: true })

/**
 * A body's text, or undefined when its bytes are not UTF-8: JSON text is UTF-8 (RFC 8259 section
 * 8.1), so such a body is no JSON, rather than replacement characters in place of its bytes.
 */
export const utf8Text = (bytes: Uint8Array): string | undefined => {
  // ASCII (nearly every JSON body; all of an upload's base64) reads as Latin-1 twice as fast as
  // the decoder reads it, with the same characters.
  if (isAscii(bytes)) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1")
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

const textOf = (self: Buffered) => self[BODY].text

/**
 * What a request with an already-read body answers instead of reading its stream. The text is
 * decoded once, when the edge checks it (domain/Storable.ts); the ArrayBuffer copy is made on
 * first use only: a staged file's body is tens of megabytes, and the API reads only the text.
 */
const bodyAccessors: PropertyDescriptorMap = {
  arrayBuffer: {
    get(this: Buffered) {
      const bytes = this[BODY].bytes
      return Effect.sync(() => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
    }
  },
  text: {
    get(this: Buffered) {
      return Effect.sync(() => textOf(this))
    }
  },
  json: {
    get(this: Buffered) {
      return Effect.try({
        try: () => {
          const value = textOf(this)
          return value === "" ? null : JSON.parse(value)
        },
        catch: () => malformedBody()
      })
    }
  },
  stream: {
    get(this: Buffered) {
      return Stream.make(this[BODY].bytes)
    }
  }
}

/** One prototype per request class, so every wrapped request has the same shape. */
const bufferedPrototypes = new WeakMap<object, object>()

/** The same request (its own fields copied), with a body that has already been read. */
export const withBody = (request: HttpServerRequest.HttpServerRequest, body: Uint8Array, text: string): HttpServerRequest.HttpServerRequest => {
  const base = Object.getPrototypeOf(request) as object
  let prototype = bufferedPrototypes.get(base)
  if (prototype === undefined) {
    prototype = Object.create(base, bodyAccessors) as object
    bufferedPrototypes.set(base, prototype)
  }
  const wrapped = Object.assign(Object.create(prototype) as object, request)
  return Object.assign(wrapped, { [BODY]: { bytes: body, text } }) as HttpServerRequest.HttpServerRequest
}
