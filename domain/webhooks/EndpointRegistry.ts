/**
 * A project's registry of webhook endpoints: the stream that makes the per-project cap exact.
 * Creating an endpoint registers it here in the same commit as its own `EndpointCreated`, with
 * the registry's expected version, so two creates racing for the last place cannot both win;
 * deleting one frees its place. Pure, like every decider.
 *
 * A project whose endpoints predate the registry has none of its events: its first registration
 * carries the endpoints the caller found (the view), so the count starts right.
 */
import { Schema } from "effect"
import { streamCodec } from "../EventCodec.ts"

export const REGISTRY_STREAM_TYPE = "webhook-registry"
export const registryStreamId = (projectId: string): string => `${REGISTRY_STREAM_TYPE}-${projectId}`

export const EndpointRegistered = Schema.Struct({
  type: Schema.Literal("EndpointRegistered"),
  endpointId: Schema.String,
  /** On a project's first registration: the endpoints it already had. */
  existing: Schema.optionalKey(Schema.Array(Schema.String))
})
export const EndpointUnregistered = Schema.Struct({ type: Schema.Literal("EndpointUnregistered"), endpointId: Schema.String })

export const RegistryEvent = Schema.Union([EndpointRegistered, EndpointUnregistered])
export type RegistryEvent = typeof RegistryEvent.Type

export const registryCodec = streamCodec(REGISTRY_STREAM_TYPE, RegistryEvent)

/** Undefined until the first registration; then the project's endpoint ids. */
export type RegistryState = ReadonlySet<string> | undefined

export type RegistryCommand =
  | { readonly type: "Register"; readonly endpointId: string; readonly cap: number; readonly existing: ReadonlyArray<string> }
  | { readonly type: "Unregister"; readonly endpointId: string }

export interface EndpointLimitReached {
  readonly _tag: "EndpointLimitReached"
  readonly cap: number
}

export const evolve = (state: RegistryState, event: RegistryEvent): RegistryState => {
  const ids = new Set(state)
  if (event.type === "EndpointRegistered") {
    for (const id of event.existing ?? []) ids.add(id)
    ids.add(event.endpointId)
  } else ids.delete(event.endpointId)
  return ids
}

export const decide = (command: RegistryCommand, state: RegistryState): ReadonlyArray<RegistryEvent> | EndpointLimitReached => {
  if (command.type === "Unregister") return state?.has(command.endpointId) === true ? [{ type: "EndpointUnregistered", endpointId: command.endpointId }] : []
  const known = state ?? new Set(command.existing)
  if (known.has(command.endpointId)) return []
  if (known.size >= command.cap) return { _tag: "EndpointLimitReached", cap: command.cap }
  return [{
    type: "EndpointRegistered",
    endpointId: command.endpointId,
    ...(state === undefined && command.existing.length > 0 ? { existing: [...command.existing] } : {})
  }]
}

export const registryDecider = {
  streamType: REGISTRY_STREAM_TYPE,
  codec: registryCodec,
  initialState: undefined as RegistryState,
  evolve,
  decide
}
