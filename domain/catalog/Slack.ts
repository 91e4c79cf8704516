/**
 * The slack toolkit: posting through the Web API with a bot token, and the Events API
 * `message` event as a push trigger. Normalization of the pushed event lives here (pure) so the
 * ingest route and the tests share one definition of the payload.
 */
import { Predicate, Schema } from "effect"
import { FilterText, filterTextSchema, type ToolDefinition, type ToolkitManifest, type TriggerDefinition } from "./Catalog.ts"

/** Slack truncates messages beyond 40,000 characters; refusing them up front is clearer. */
export const MAX_TEXT_CODE_POINTS = 40_000

export const PostMessageInput = Schema.Struct({
  channel: Schema.String.check(Schema.isMinLength(1), Schema.isMaxCodePoints(255)),
  text: Schema.String.check(Schema.isMinLength(1), Schema.isMaxCodePoints(MAX_TEXT_CODE_POINTS))
})
export type PostMessageInput = typeof PostMessageInput.Type

export const postMessage: ToolDefinition = {
  name: "slack.post_message",
  toolkit: "slack",
  description: "Posts a message to a Slack channel as the connected bot (Web API chat.postMessage).",
  capability: "messaging",
  version: "1.0.0",
  input: PostMessageInput,
  inputSchema: {
    type: "object",
    properties: {
      channel: { type: "string", minLength: 1, maxLength: 255, description: "Channel id (C…) or name." },
      text: { type: "string", minLength: 1, maxLength: MAX_TEXT_CODE_POINTS, description: "Message text (mrkdwn)." }
    },
    required: ["channel", "text"],
    additionalProperties: false
  },
  outputSchema: {
    type: "object",
    properties: {
      channel: { type: "string", description: "The channel id the message was posted to." },
      ts: { type: "string", description: "The message timestamp, Slack's message id." }
    },
    required: ["channel", "ts"],
    additionalProperties: false
  },
  scopes: ["chat:write"],
  asyncByNature: false,
  pure: false,
  timeoutMs: 30_000,
  annotations: { title: "Post a Slack message", readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
}

export const MessageFilters = Schema.Struct({
  channel: Schema.optionalKey(FilterText),
  user: Schema.optionalKey(FilterText)
})
export type MessageFilters = typeof MessageFilters.Type

const messageFiltersSchema = {
  type: "object",
  properties: {
    channel: filterTextSchema("Only messages in this channel id."),
    user: filterTextSchema("Only messages from this user id.")
  },
  additionalProperties: false
}

/** The normalized payload of `slack.message_posted`. */
export interface MessagePosted {
  readonly channel: string
  readonly user: string
  readonly text: string
  readonly ts: string
}

export const messagePosted: TriggerDefinition = {
  name: "slack.message_posted",
  toolkit: "slack",
  capability: "messaging",
  description: "A message posted in a channel the bot is in (Events API `message` events, user messages only).",
  payloadSchema: {
    type: "object",
    properties: {
      channel: { type: "string" },
      user: { type: "string" },
      text: { type: "string" },
      ts: { type: "string" }
    },
    required: ["channel", "user", "text", "ts"],
    additionalProperties: false
  },
  annotations: { title: "Slack message posted", providerEvent: "message", filtersSchema: messageFiltersSchema },
  version: "1.0.0",
  deliveryMode: "push",
  scopes: ["channels:history"],
  filters: MessageFilters
}

// Subtypes that are still a person posting; edits, deletions, joins and bot posts are not.
const USER_SUBTYPES: ReadonlySet<string> = new Set(["thread_broadcast", "file_share", "me_message"])

/**
 * The normalized payload of an Events API `event` object, or undefined when the event is not a
 * message posted by a user (another event type, an edit, a deletion, a bot message).
 */
export const normalizeMessageEvent = (event: unknown): MessagePosted | undefined => {
  if (!Predicate.isObject(event) || !Predicate.hasProperty(event, "type") || event.type !== "message") return undefined
  if (Predicate.hasProperty(event, "subtype") && !(Predicate.isString(event.subtype) && USER_SUBTYPES.has(event.subtype))) {
    return undefined
  }
  if (Predicate.hasProperty(event, "bot_id")) return undefined
  const { channel, user, text, ts } = event as { readonly [key: string]: unknown }
  if (!Predicate.isString(channel) || !Predicate.isString(user) || !Predicate.isString(ts)) return undefined
  return { channel, user, text: Predicate.isString(text) ? text : "", ts }
}

export const matchesMessageFilters = (payload: MessagePosted, filters: MessageFilters): boolean =>
  (filters.channel === undefined || filters.channel === payload.channel) &&
  (filters.user === undefined || filters.user === payload.user)

export const manifest: ToolkitManifest = {
  name: "slack",
  version: "1.0.0",
  description: "Slack workspace messaging through a bot token.",
  authClasses: ["bearer"],
  limits: {},
  tools: [postMessage],
  triggers: [messagePosted]
}
