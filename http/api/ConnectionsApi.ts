/**
 * Connections (decisions.md section 4, an extension): user-scoped provider credentials, sealed
 * at rest and never returned.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { pageQuery } from "./Query.ts"

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
  userId: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.-]{1,64}$/))),
  toolkit: Schema.String.check(Schema.isMaxLength(64)),
  authClass: AuthClass,
  credentials: Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(8192))).check(
    Schema.isMaxProperties(16)
  ),
  scopes: Schema.optionalKey(Schema.Array(Schema.String.check(Schema.isMaxLength(128))).check(Schema.isMaxLength(64))),
  expiresAt: Schema.optionalKey(Schema.String)
})

const ConnectionIdParam = { connectionId: Schema.String.check(Schema.isMaxLength(100)) }

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.post("create", "/v1/connections", {
      payload: CreateConnection,
      headers: { "x-service-user-id": Schema.optionalKey(Schema.String) },
      success: Connection.pipe(HttpApiSchema.status(201))
    }),
    HttpApiEndpoint.get("list", "/v1/connections", {
      query: { ...pageQuery, userId: Schema.optionalKey(Schema.String) },
      headers: { "x-service-user-id": Schema.optionalKey(Schema.String) },
      success: Schema.Struct({ connections: Schema.Array(Connection), nextCursor: Schema.optionalKey(Schema.String) })
    }),
    HttpApiEndpoint.get("get", "/v1/connections/:connectionId", { params: ConnectionIdParam, success: Connection }),
    HttpApiEndpoint.delete("delete", "/v1/connections/:connectionId", { params: ConnectionIdParam })
  ) {}
