/**
 * The webhook endpoint actor: its events, state, `evolve` and `decide`, and the subscription
 * rules (spec, "Events: Webhook subscriptions and delivered types"). Pure: secrets arrive
 * already sealed, time arrives on the command.
 */
import { Schema } from "effect"
import { findTrigger, listTriggers } from "../catalog/index.ts"
import { streamCodec } from "../EventCodec.ts"

export const ENDPOINT_STREAM_TYPE = "webhook-endpoint"
export const endpointStreamId = (endpointId: string): string => `${ENDPOINT_STREAM_TYPE}-${endpointId}`

export const EXECUTION_SUBSCRIPTIONS = ["execution.completed", "execution.succeeded", "execution.failed", "execution.cancelled"] as const
export const FIXED_SUBSCRIPTIONS: ReadonlySet<string> = new Set([
  ...EXECUTION_SUBSCRIPTIONS,
  "voice.session.event",
  "voice.transcript.ready",
  "voice.observer.failed",
  "trigger.*"
])

/** Why a subscription entry is refused, or undefined when it is valid; a refusal names the valid entries. */
export const subscriptionProblem = (entry: string): string | undefined => {
  if (FIXED_SUBSCRIPTIONS.has(entry)) return undefined
  if (entry.startsWith("trigger.")) {
    // The canonical dotted name only: events are delivered as `trigger.<toolkit>.<name>`.
    const name = entry.slice("trigger.".length)
    if (findTrigger(name)?.name === name) return undefined
    return `unknown trigger ${entry}; the catalog's triggers are ${listTriggers().map((t) => `trigger.${t.name}`).join(", ")}`
  }
  return `unknown event type ${entry}; expected one of ${[...FIXED_SUBSCRIPTIONS].join(", ")} or trigger.<toolkit>.<name>`
}

/** Whether an endpoint subscribed to `events` receives a delivered `type`. */
export const subscribes = (events: ReadonlyArray<string>, type: string): boolean => {
  if (events.includes(type)) return true
  if (type.startsWith("execution.")) return events.includes("execution.completed")
  if (type.startsWith("trigger.")) return events.includes("trigger.*")
  return false
}

export const EndpointCreated = Schema.Struct({
  type: Schema.Literal("EndpointCreated"),
  endpointId: Schema.String,
  projectId: Schema.String,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  active: Schema.Boolean,
  sealedSecret: Schema.String,
  secretPrefix: Schema.String,
  at: Schema.String
})
export type EndpointCreated = typeof EndpointCreated.Type
export const EndpointUpdated = Schema.Struct({
  type: Schema.Literal("EndpointUpdated"),
  url: Schema.optionalKey(Schema.String),
  events: Schema.optionalKey(Schema.Array(Schema.String)),
  active: Schema.optionalKey(Schema.Boolean),
  at: Schema.String
})
export type EndpointUpdated = typeof EndpointUpdated.Type
export const EndpointSecretRotated = Schema.Struct({
  type: Schema.Literal("EndpointSecretRotated"),
  sealedSecret: Schema.String,
  secretPrefix: Schema.String,
  at: Schema.String
})
export type EndpointSecretRotated = typeof EndpointSecretRotated.Type
export const EndpointDeleted = Schema.Struct({ type: Schema.Literal("EndpointDeleted"), at: Schema.String })
export type EndpointDeleted = typeof EndpointDeleted.Type

export const EndpointEvent = Schema.Union([EndpointCreated, EndpointUpdated, EndpointSecretRotated, EndpointDeleted])
export type EndpointEvent = typeof EndpointEvent.Type

/** How endpoint events enter the log and come back out of it (EventCodec.ts). */
export const endpointCodec = streamCodec(ENDPOINT_STREAM_TYPE, EndpointEvent)

export interface Endpoint {
  readonly endpointId: string
  readonly projectId: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly active: boolean
  readonly sealedSecret: string
  readonly secretPrefix: string
  readonly createdAt: string
  readonly updatedAt: string
  readonly deleted: boolean
}

export type EndpointState = Endpoint | undefined

export const evolve = (state: EndpointState, event: EndpointEvent): EndpointState => {
  switch (event.type) {
    case "EndpointCreated":
      return {
        endpointId: event.endpointId,
        projectId: event.projectId,
        url: event.url,
        events: event.events,
        active: event.active,
        sealedSecret: event.sealedSecret,
        secretPrefix: event.secretPrefix,
        createdAt: event.at,
        updatedAt: event.at,
        deleted: false
      }
    case "EndpointUpdated":
      return state === undefined ? state : {
        ...state,
        ...(event.url !== undefined ? { url: event.url } : {}),
        ...(event.events !== undefined ? { events: event.events } : {}),
        ...(event.active !== undefined ? { active: event.active } : {}),
        updatedAt: event.at
      }
    case "EndpointSecretRotated":
      return state === undefined ? state : { ...state, sealedSecret: event.sealedSecret, secretPrefix: event.secretPrefix, updatedAt: event.at }
    case "EndpointDeleted":
      return state === undefined ? state : { ...state, deleted: true, updatedAt: event.at }
  }
}

export const fold = (events: ReadonlyArray<EndpointEvent>): EndpointState => events.reduce(evolve, undefined as EndpointState)

/** When the endpoint was switched off (`active: false`), oldest first. */
export const deactivations = (events: ReadonlyArray<EndpointEvent>): ReadonlyArray<string> =>
  events.flatMap((event) => (event.type === "EndpointUpdated" && event.active === false ? [event.at] : []))

/**
 * Whether a delivery queued at `queuedAt` was unfinished when the endpoint was switched off:
 * that stops it for good (spec, "Delivery rules" 5), though the endpoint is active again by the
 * time its lane looks.
 */
export const stoppedBySwitchOff = (switchedOff: ReadonlyArray<string>, queuedAt: string): boolean => {
  const queued = Date.parse(queuedAt)
  return switchedOff.some((at) => Date.parse(at) >= queued)
}

/** Every command but the creation names the project asking: another project's endpoint is not found. */
export type EndpointCommand =
  | { readonly type: "CreateEndpoint"; readonly endpoint: Omit<EndpointCreated, "type"> }
  | { readonly type: "UpdateEndpoint"; readonly projectId: string; readonly changes: Omit<EndpointUpdated, "type" | "at">; readonly at: string }
  | { readonly type: "RotateEndpointSecret"; readonly projectId: string; readonly sealedSecret: string; readonly secretPrefix: string; readonly at: string }
  | { readonly type: "DeleteEndpoint"; readonly projectId: string; readonly at: string }

export type EndpointRejection = { readonly _tag: "EndpointNotFound" } | { readonly _tag: "EndpointExists" }

/** Events for a command, or why the current state refuses it. */
export const decide = (
  command: EndpointCommand,
  state: EndpointState
): ReadonlyArray<EndpointEvent> | EndpointRejection => {
  if (command.type === "CreateEndpoint") {
    return state === undefined ? [{ type: "EndpointCreated", ...command.endpoint }] : { _tag: "EndpointExists" }
  }
  if (state === undefined || state.deleted || state.projectId !== command.projectId) return { _tag: "EndpointNotFound" }
  switch (command.type) {
    case "UpdateEndpoint":
      return [{ type: "EndpointUpdated", ...command.changes, at: command.at }]
    case "RotateEndpointSecret":
      return [{ type: "EndpointSecretRotated", sealedSecret: command.sealedSecret, secretPrefix: command.secretPrefix, at: command.at }]
    case "DeleteEndpoint":
      return [{ type: "EndpointDeleted", at: command.at }]
  }
}

/** `HTTPS://LocalHost:443/Hook/Path#x` → `https://localhost/Hook/Path` (the WHATWG parser does the rest). */
export const normalizeUrl = (url: URL): string => {
  const copy = new URL(url.href)
  copy.hash = ""
  return copy.href
}

export const endpointDecider = {
  streamType: ENDPOINT_STREAM_TYPE,
  codec: endpointCodec,
  initialState: undefined as EndpointState,
  evolve,
  decide
}
