/**
 * The bounds of an execute request's own fields, one definition for every way in
 * (`POST /v1/execute`, an MCP `tools/call`'s `_meta`, `service.execute_tool`), so that no door
 * takes what another refuses.
 */
import { Schema } from "effect"
import { isPrintable } from "../PrintableText.ts"

/** At most this many staged files per execution. */
export const MAX_ATTACHMENTS = 32

/** An idempotency key: 1 to 255 characters, none of them a control character. */
export const IdempotencyKeyText = Schema.String.check(
  Schema.isBetweenLength(1, 255),
  isPrintable("an idempotency key must not contain control characters")
)

/** The staged files an execution may read, by id. */
export const AttachmentIds = Schema.Array(Schema.String.check(Schema.isMaxLength(100))).check(Schema.isMaxLength(MAX_ATTACHMENTS))
