/**
 * Opaque, tamper-evident list cursors (decisions.md section 2). A cursor carries the keyset
 * position of the last item of a page, bound by a MAC to its route and project: a forged,
 * altered or cross-project cursor is refused with 422, never followed.
 */
import { Effect, Schema } from "effect"
import { InvalidInput } from "../../domain/Errors.ts"
import type { Json } from "../../infra/eventlog/EventStore.ts"
import { Secrets } from "../../infra/access/Secrets.ts"

const badCursor = () => new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })

export interface CursorCodec {
  readonly encode: (scope: string, position: ReadonlyArray<Json>) => string
  readonly decode: (scope: string, cursor: string) => Effect.Effect<ReadonlyArray<Json>, InvalidInput>
}

const Position = Schema.Array(Schema.Union([Schema.String, Schema.Number, Schema.Boolean, Schema.Null]))
const decodePosition = Schema.decodeUnknownResult(Schema.fromJsonString(Position))

/** `scope` names the list and the project, e.g. `files:proj_1`. */
export const makeCursors = Effect.map(Secrets, (secrets): CursorCodec => ({
  encode: (scope, position) => {
    const body = Buffer.from(JSON.stringify(position), "utf8").toString("base64url")
    return `${body}.${secrets.mac(`cursor:${scope}`, body).slice(0, 22)}`
  },
  decode: (scope, cursor) =>
    Effect.suspend(() => {
      if (cursor.length > 2048) return Effect.fail(badCursor())
      const dot = cursor.indexOf(".")
      const body = cursor.slice(0, dot)
      const mac = cursor.slice(dot + 1)
      if (dot <= 0 || !secrets.verifyMac(`cursor:${scope}`, body, mac, 22)) return Effect.fail(badCursor())
      const decoded = decodePosition(Buffer.from(body, "base64url").toString("utf8"))
      return decoded._tag === "Success" ? Effect.succeed(decoded.success) : Effect.fail(badCursor())
    })
}))
