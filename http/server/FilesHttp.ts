/**
 * Handlers of the files group: the caller's project scopes every call, the list cursor anchors
 * the last file id of a page under a MAC bound to `files:<projectId>`.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { InvalidInput } from "../../domain/Errors.ts"
import { toMetadata } from "../../domain/files/Files.ts"
import { StagedFiles } from "../../infra/files/StagedFiles.ts"
import { Api } from "../api/Api.ts"
import { Caller } from "../api/Caller.ts"
import { makeCursors } from "./Cursor.ts"
import { DEFAULT_LIMIT } from "../api/Query.ts"

// Store faults are not the client's doing: they die and become the envelope's opaque 500.
export const FilesHttp = HttpApiBuilder.group(Api, "files", (handlers) =>
  Effect.gen(function*() {
    const files = yield* StagedFiles
    const cursors = yield* makeCursors
    return handlers
      .handle("stage", Effect.fnUntraced(function*({ payload }) {
        const caller = yield* Caller
        // The content was just parsed and checked, and is decoded next, tens of milliseconds
        // each for a large file: other requests are served between the two.
        yield* Effect.yieldNow
        return toMetadata(yield* files.stage({ projectId: caller.projectId, ...payload }))
      }, Effect.catchTag("StoreUnavailable", Effect.die)))
      .handle("list", Effect.fnUntraced(function*({ query }) {
        const caller = yield* Caller
        const scope = `files:${caller.projectId}`
        const position = query.cursor === undefined ? undefined : yield* cursors.decode(scope, query.cursor)
        const anchor = position?.[0]
        if (position !== undefined && (position.length !== 1 || typeof anchor !== "string")) {
          return yield* new InvalidInput({ message: "The cursor is malformed or does not belong to this list." })
        }
        const after = typeof anchor === "string" ? anchor : undefined
        const page = yield* files.list(caller.projectId, { limit: query.limit ?? DEFAULT_LIMIT, after })
        const last = page.files[page.files.length - 1]
        return {
          files: page.files.map(toMetadata),
          ...(page.more && last !== undefined ? { nextCursor: cursors.encode(scope, [last.fileId]) } : {})
        }
      }, Effect.catchTag("StoreUnavailable", Effect.die)))
      .handle("get", ({ params }) =>
        Effect.flatMap(Caller, (caller) => Effect.map(files.get(caller.projectId, params.fileId), toMetadata)).pipe(Effect.catchTag("StoreUnavailable", Effect.die)))
  }))
