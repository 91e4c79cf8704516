/**
 * Staged files (spec, "Endpoints: Staged files"): upload as base64 JSON, list (unpinned keys),
 * get one. Metadata only: no route returns bytes or where they are kept.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { FileMetadata, FilePage, StageFileRequest } from "../../domain/files/Files.ts"
import { UnpinnedOnly } from "./Middleware.ts"
import { described, pageQuery } from "./Query.ts"

export class FilesApi extends HttpApiGroup.make("files")
  .add(
    HttpApiEndpoint.post("stage", "/v1/files", {
      payload: StageFileRequest,
      success: FileMetadata.pipe(HttpApiSchema.status(201))
    }).annotateMerge(described(
      "Stage a file",
      "The content is canonical padded base64 (no URL-safe or unpadded forms), at most 25 MiB decoded " +
        "(SERVICE_FILE_MAX_BYTES). The file lives for an hour (SERVICE_FILE_TTL_MS); pass its id in an execute " +
        "request's `attachments`."
    )),
    HttpApiEndpoint.get("list", "/v1/files", { query: pageQuery, success: FilePage }).annotate(UnpinnedOnly, true).annotateMerge(described(
      "List staged files",
      "Unpinned keys only. Newest first; expired files are left out."
    )),
    // Any id string is accepted here: a malformed id must get the same 404 as a missing one.
    HttpApiEndpoint.get("get", "/v1/files/:fileId", {
      params: { fileId: Schema.String },
      success: FileMetadata
    }).annotateMerge(described(
      "Get a staged file's metadata",
      "A missing, expired, malformed or other project's id gets the same 404."
    ))
  )
  .annotateMerge(OpenApi.annotations({ description: "Files staged for tools: metadata only, bytes are never returned." })) {}
