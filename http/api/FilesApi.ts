/**
 * Staged files (spec, "Endpoints: Staged files"): upload as base64 JSON, list (unpinned keys),
 * get one. Metadata only: no route returns bytes or where they are kept.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { FileMetadata, FilePage, StageFileRequest } from "../../domain/files/Files.ts"
import { pageQuery } from "./Query.ts"

export class FilesApi extends HttpApiGroup.make("files")
  .add(
    HttpApiEndpoint.post("stage", "/v1/files", {
      payload: StageFileRequest,
      success: FileMetadata.pipe(HttpApiSchema.status(201))
    }),
    HttpApiEndpoint.get("list", "/v1/files", { query: pageQuery, success: FilePage }),
    // Any id string is accepted here: a malformed id must get the same 404 as a missing one.
    HttpApiEndpoint.get("get", "/v1/files/:fileId", {
      params: { fileId: Schema.String },
      success: FileMetadata
    })
  ) {}
