/**
 * Trigger events as a webhook source (infra/webhooks/WebhookSources.ts). The dispatcher selects
 * nothing from it: trigger events go only to the endpoints their subscription named, and their
 * deliveries are queued by the triggers' own fan-out (TriggerFanout.ts). A lane that no longer
 * remembers a trigger delivery's event rebuilds it here, from this process's payloads
 * (TriggerPayloads.ts); when the payload is gone (a restart, an eviction) there is nothing to
 * send, and the delivery fails with `payload_unavailable`. When the lane runs in another process
 * than the one that took the event (the endpoint's lease was there), the lane hands itself over to
 * the process holding the payload, whose fan-out keeps asking for the lease.
 */
import { ARRIVAL_STREAM_TYPE, arrivalCodec } from "../../domain/triggers/TriggerEvent.ts"
import type { RecordedEvent } from "../eventlog/EventStore.ts"
import type { WebhookEvent, WebhookSource } from "../webhooks/WebhookSources.ts"
import type { TriggerPayloadsShape } from "./TriggerPayloads.ts"

/**
 * The event a delivery of an accepted arrival sends, while its payload is here; `elsewhere` while
 * another live process (the one that admitted it) has it, which then runs the lane.
 */
export const rebuildTriggerEvent = (payloads: TriggerPayloadsShape, recorded: RecordedEvent): WebhookEvent | "elsewhere" | undefined => {
  if (recorded.streamType !== ARRIVAL_STREAM_TYPE) return undefined
  const event = arrivalCodec.decode(recorded)
  return event.type === "TriggerEventReceived" && event.dedupStatus === "accepted" ? payloads.locate(event.eventId, event.owner, recorded.createdAt) : undefined
}

export const triggerSource = (payloads: TriggerPayloadsShape): WebhookSource => ({
  name: "triggers",
  streamTypes: [ARRIVAL_STREAM_TYPE],
  fromEvent: () => undefined,
  rebuild: (recorded) => rebuildTriggerEvent(payloads, recorded)
})
