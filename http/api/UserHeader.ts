/**
 * The `X-Service-User-Id` header, as the routes that act for a user declare it (the user rules
 * are in http/server/Users.ts).
 */
import { Schema } from "effect"

export const UserHeader = { "x-service-user-id": Schema.optionalKey(Schema.String) }
