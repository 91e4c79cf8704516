/**
 * Connections (decisions.md section 4, an extension): user-scoped provider credentials, sealed
 * at rest and never returned.
 */
import { Schema } from "effect"
import { UserIdText } from "../../domain/Ids.ts"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { described, pageQuery } from "./Query.ts"
import { PathId } from "./PathId.ts"
import { UserHeader } from "./UserHeader.ts"

export const AuthClass = Schema.Literals(["none", "api_key", "bearer", "oauth2"])

export const Connection = Schema.Struct({
  connectionId: Schema.String,
  userId: Schema.String,
  toolkit: Schema.String,
  authClass: AuthClass,
  scopes: Schema.Array(Schema.String),
  expiresAt: Schema.optionalKey(Schema.String),
  createdAt: Schema.String
})
export type Connection = typeof Connection.Type

export const CreateConnection = Schema.Struct({
  userId: Schema.optionalKey(UserIdText),
  toolkit: Schema.String.check(Schema.isMaxLength(64)),
  authClass: AuthClass,
  credentials: Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(8192))).check(
    Schema.isMaxProperties(16)
  ),
  scopes: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))).check(Schema.isMaxLength(64))),
  expiresAt: Schema.optionalKey(Schema.String)
})

const ConnectionIdParam = { connectionId: PathId }

/** The user a request acts for (unpinned keys), as on every route that acts for one. */

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.post("create", "/v1/connections", {
      payload: CreateConnection,
      headers: UserHeader,
      success: Connection.pipe(HttpApiSchema.status(201))
    }).annotateMerge(described(
      "Create a connection",
      "A user's credentials for a toolkit, sealed at rest and never returned. Tools of the toolkit use it when an " +
        "execute request names it in `connectionId`."
    )),
    HttpApiEndpoint.get("list", "/v1/connections", {
      query: { ...pageQuery, userId: Schema.optionalKey(Schema.String) },
      headers: UserHeader,
      success: Schema.Struct({ connections: Schema.Array(Connection), nextCursor: Schema.optionalKey(Schema.String) })
    }).annotateMerge(described("List connections", "A pinned key sees only its user's connections.")),
    HttpApiEndpoint.get("get", "/v1/connections/:connectionId", { params: ConnectionIdParam, headers: UserHeader, success: Connection })
      .annotateMerge(described("Get a connection", "Its metadata; never its credentials. Another user's (for a pinned key, or a user named in the header) is 404.")),
    HttpApiEndpoint.delete("delete", "/v1/connections/:connectionId", { params: ConnectionIdParam, headers: UserHeader })
      .annotateMerge(described("Delete a connection", "Later executions naming it fail; finished records are kept. Another user's is 404."))
  )
  .annotateMerge(OpenApi.annotations({ description: "User-scoped provider credentials (an extension, decisions.md section 4)." })) {}
