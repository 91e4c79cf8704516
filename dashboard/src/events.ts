/**
 * What a webhook endpoint can subscribe to (spec, "Webhook subscriptions and delivered types";
 * decisions.md 6): the fixed event types, `trigger.*`, and one `trigger.<toolkit>.<name>` per
 * trigger of the catalog.
 */
import { listTriggers } from "../../client/index.ts"

const FIXED: ReadonlyArray<{ readonly event: string; readonly hint: string }> = [
  { event: "execution.completed", hint: "every terminal execution: succeeded, failed or cancelled" },
  { event: "execution.succeeded", hint: "" },
  { event: "execution.failed", hint: "" },
  { event: "execution.cancelled", hint: "" },
  { event: "voice.session.event", hint: "" },
  { event: "voice.transcript.ready", hint: "" },
  { event: "voice.observer.failed", hint: "" },
  { event: "trigger.*", hint: "every trigger event sent to this endpoint" }
]

export const EVENT_CHOICES: ReadonlyArray<{ readonly event: string; readonly hint: string }> = [
  ...FIXED,
  ...listTriggers().map((trigger) => ({ event: `trigger.${trigger.name}`, hint: trigger.description }))
]

/** Whether an endpoint subscribed to `events` may be named by a subscription to `trigger`. */
export const acceptsTrigger = (events: ReadonlyArray<string>, trigger: string): boolean =>
  events.includes("trigger.*") || events.includes(`trigger.${trigger}`)
