/**
 * Connections (decisions.md section 4): the events of a connection's stream and the pure rules.
 * Which credential fields each auth class takes, what a valid expiry is, and which connection an
 * execution uses. No clock: `now` comes in as an argument.
 */
import { Schema } from "effect"
import type { AuthClass, ToolkitManifest } from "./catalog/Catalog.ts"
import { envelopeTypedStreamCodec } from "./EventCodec.ts"
import { parseIsoDateTime } from "./Time.ts"

export const CONNECTION_STREAM_TYPE = "connection"
export const connectionStreamId = (connectionId: string): string => `connection-${connectionId}`

/** Schema version 1. `credentials` is `Secrets.seal(JSON of the fields)`, never plain. */
export const ConnectionCreated = Schema.Struct({
  type: Schema.Literal("ConnectionCreated"),
  connectionId: Schema.String,
  projectId: Schema.String,
  userId: Schema.String,
  toolkit: Schema.String,
  authClass: Schema.String,
  scopes: Schema.Array(Schema.String),
  expiresAt: Schema.optionalKey(Schema.String),
  createdAt: Schema.String,
  credentials: Schema.String
})
export type ConnectionCreated = typeof ConnectionCreated.Type
export const ConnectionDeleted = Schema.Struct({
  type: Schema.Literal("ConnectionDeleted"),
  connectionId: Schema.String,
  projectId: Schema.String,
  deletedAt: Schema.String
})
export type ConnectionDeleted = typeof ConnectionDeleted.Type

export const ConnectionEvent = Schema.Union([ConnectionCreated, ConnectionDeleted])
export type ConnectionEvent = typeof ConnectionEvent.Type

/** Connection events were written before they had schemas: their data leaves the type to the log. */
export const connectionCodec = envelopeTypedStreamCodec(CONNECTION_STREAM_TYPE, ConnectionEvent)

/** The fields each auth class takes: required ones, then optional ones; nothing else. */
const CREDENTIAL_FIELDS: Record<AuthClass, { readonly required: ReadonlyArray<string>; readonly optional: ReadonlyArray<string> }> = {
  none: { required: [], optional: [] },
  // A Slack bot connection may carry its app's signing secret: push ingest then checks
  // Slack's request signature (decisions.md section 5).
  bearer: { required: ["token"], optional: ["signingSecret"] },
  api_key: { required: ["apiKey"], optional: [] },
  oauth2: { required: ["accessToken"], optional: ["refreshToken"] }
}

/** A description of what is wrong with the credentials for `authClass`, or undefined. */
export const credentialProblem = (authClass: AuthClass, credentials: Readonly<Record<string, string>>): string | undefined => {
  const fields = CREDENTIAL_FIELDS[authClass]
  const expected = [...fields.required, ...fields.optional.map((field) => `${field}?`)].join(", ")
  const shape = `credentials for ${authClass} must be {${expected}}`
  for (const key of Object.keys(credentials)) {
    if (!fields.required.includes(key) && !fields.optional.includes(key)) return `${shape}; unknown field ${JSON.stringify(key)}.`
  }
  for (const field of fields.required) {
    const value = credentials[field]
    if (value === undefined) return `${shape}; ${field} is missing.`
    if (value.trim() === "") return `${shape}; ${field} is empty.`
  }
  for (const field of fields.optional) {
    if (credentials[field] !== undefined && credentials[field].trim() === "") return `${shape}; ${field} is empty.`
  }
  return undefined
}

/** The expiry normalized to UTC with milliseconds, or a description of what is wrong. */
export const parseExpiry = (
  value: string,
  nowMs: number
): { readonly ok: true; readonly expiresAt: string } | { readonly ok: false; readonly message: string } => {
  const ms = parseIsoDateTime(value)
  if (Number.isNaN(ms)) return { ok: false, message: "expiresAt must be an ISO 8601 date-time with a zone, e.g. 2030-01-01T00:00:00.000Z." }
  if (ms <= nowMs) return { ok: false, message: "expiresAt must be in the future." }
  return { ok: true, expiresAt: new Date(ms).toISOString() }
}

export const isExpired = (expiresAt: string | undefined, nowMs: number): boolean =>
  expiresAt !== undefined && Date.parse(expiresAt) <= nowMs

/** A toolkit whose only auth class is `none` runs without a connection. */
export const needsConnection = (toolkit: ToolkitManifest): boolean => toolkit.authClasses.some((authClass) => authClass !== "none")

/** The scopes a tool needs that the connection does not grant; a connection listing none grants all. */
export const missingScopes = (granted: ReadonlyArray<string>, required: ReadonlyArray<string>): ReadonlyArray<string> =>
  granted.length === 0 ? [] : required.filter((scope) => !granted.includes(scope))
