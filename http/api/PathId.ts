/**
 * A resource id in a path. Every id is `<prefix>_<body>` in ASCII letters and digits
 * (domain/Ids.ts); a parameter that cannot be one (a NUL, an escape, a character outside that
 * alphabet) names nothing, and the API answers it with the 404 of any missing id
 * (http/server/Envelope.ts) before a store sees it: Postgres refuses a NUL in a text parameter.
 */
import { Schema } from "effect"

export const PathId = Schema.String.check(Schema.isMaxLength(100), Schema.isPattern(/^[A-Za-z0-9_-]+$/u))
