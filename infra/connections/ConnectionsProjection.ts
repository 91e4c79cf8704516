/**
 * The `connections` view: one row per live connection, updated inline with the append so that a
 * GET right after the POST sees it. The row keeps the sealed credentials (never plain text) so
 * that resolving a connection before dispatch is one keyed read.
 */
import { CONNECTION_STREAM_TYPE, connectionCodec } from "../../domain/Connection.ts"
import type { RecordedEvent } from "../eventlog/EventStore.ts"
import type { Projection, RowChange } from "../eventlog/Projection.ts"

export const TABLE = "connections"

const project = (recorded: RecordedEvent): ReadonlyArray<RowChange> => {
  const event = connectionCodec.decode(recorded)
  switch (event.type) {
    case "ConnectionCreated":
      return [{
        op: "upsert",
        table: TABLE,
        row: {
          connectionId: event.connectionId,
          projectId: event.projectId,
          userId: event.userId,
          toolkit: event.toolkit,
          authClass: event.authClass,
          scopes: event.scopes,
          expiresAt: event.expiresAt ?? null,
          createdAt: event.createdAt,
          credentials: event.credentials
        }
      }]
    case "ConnectionDeleted":
      return [{ op: "delete", table: TABLE, key: { connectionId: event.connectionId } }]
  }
}

export const connectionsProjection: Projection = {
  name: "connections",
  mode: "inline",
  streamTypes: [CONNECTION_STREAM_TYPE],
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
