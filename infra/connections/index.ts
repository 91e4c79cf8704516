/**
 * Connections (decisions.md section 4): a user's sealed provider credentials, an actor per
 * connection over its stream, listed from the `connections` view.
 */
import { Layer } from "effect"
import { CONNECTION_STREAM_TYPE } from "../../domain/Connection.ts"
import * as Access from "../access/index.ts"
import * as Eventlog from "../eventlog/index.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as Connections from "./Connections.ts"
import { connectionsProjection } from "./ConnectionsProjection.ts"

export { Connections } from "./Connections.ts"

export const layer = Connections.layer.pipe(Layer.provide([Eventlog.layer, Access.layer]))

export const migrations: ReadonlyArray<Migration> = []
export const projections: ReadonlyArray<Projection> = [connectionsProjection]
export const streamTypes: ReadonlyArray<string> = [CONNECTION_STREAM_TYPE]
