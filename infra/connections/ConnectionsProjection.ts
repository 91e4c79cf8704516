/**
 * The `connections` view: one row per live connection, updated inline with the append so that a
 * GET right after the POST sees it. The row keeps the sealed credentials (never plain text) so
 * that resolving a connection before dispatch is one keyed read.
 */
import type { Json, RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, RowChange } from "../eventlog/Projection.ts"

export const STREAM_TYPE = "connection"
export const streamId = (connectionId: string): string => `connection-${connectionId}`
export const TABLE = "connections"

export const CONNECTION_CREATED = "ConnectionCreated"
export const CONNECTION_DELETED = "ConnectionDeleted"

/** `ConnectionCreated` data, schema version 1. `credentials` is `Secrets.seal(JSON of the fields)`. */
export interface ConnectionCreatedData {
  readonly connectionId: string
  readonly projectId: string
  readonly userId: string
  readonly toolkit: string
  readonly authClass: string
  readonly scopes: ReadonlyArray<string>
  readonly expiresAt?: string
  readonly createdAt: string
  readonly credentials: string
}

export interface ConnectionDeletedData {
  readonly connectionId: string
  readonly projectId: string
  readonly deletedAt: string
}

const text = (data: { readonly [key: string]: Json }, key: string): string => {
  const value = data[key]
  return typeof value === "string" ? value : ""
}

const project = (event: RecordedEvent): ReadonlyArray<RowChange> => {
  const data = event.data
  if (data === null || typeof data !== "object" || Array.isArray(data)) return []
  const fields = data as { readonly [key: string]: Json }
  switch (event.type) {
    case CONNECTION_CREATED:
      return [{
        op: "upsert",
        table: TABLE,
        row: {
          connectionId: text(fields, "connectionId"),
          projectId: text(fields, "projectId"),
          userId: text(fields, "userId"),
          toolkit: text(fields, "toolkit"),
          authClass: text(fields, "authClass"),
          scopes: Array.isArray(fields.scopes) ? fields.scopes : [],
          expiresAt: typeof fields.expiresAt === "string" ? fields.expiresAt : null,
          createdAt: text(fields, "createdAt"),
          credentials: text(fields, "credentials")
        }
      }]
    case CONNECTION_DELETED:
      return [{ op: "delete", table: TABLE, key: { connectionId: text(fields, "connectionId") } }]
    default:
      return []
  }
}

export const connectionsProjection: Projection = {
  name: "connections",
  mode: "inline",
  streamTypes: [STREAM_TYPE],
  tables: [{
    name: TABLE,
    columns: {
      connectionId: "text",
      projectId: "text",
      userId: "text",
      toolkit: "text",
      authClass: "text",
      scopes: "jsonb",
      expiresAt: "text",
      createdAt: "text",
      credentials: "text"
    },
    nullable: ["expiresAt"],
    primaryKey: ["connectionId"],
    indexes: [["projectId", "-connectionId"], ["projectId", "userId", "toolkit"]]
  }],
  project
}
