/**
 * Webhook event sources: each maps recorded log events of its stream types to webhook events.
 * The dispatcher follows the log and asks the sources; the lanes rebuild an envelope from the
 * source event named by a delivery, so payloads never enter delivery streams and survive a
 * restart exactly as durable as their source (spec, "Delivery rules" 9).
 *
 * Executions (contract with the executions feature): streams of type `execution`; the terminal
 * events `ExecutionSucceeded`, `ExecutionFailed`, `ExecutionCancelled` carry the public record in
 * `data.record`, whose `projectId` selects endpoints. The recorded event's id is the envelope id.
 */
import { Context, Layer } from "effect"
import { STREAM_TYPE as EXECUTION_STREAM_TYPE } from "../../domain/executions/Execution.ts"
import type { Json, RecordedEvent } from "../eventlog/EventStore.ts"
import { isJsonObject } from "../../domain/JsonObject.ts"

export interface WebhookEvent {
  /** The envelope `id`, the `Service-Webhook-Id` header and the delivery record's eventId. */
  readonly eventId: string
  readonly type: string
  readonly projectId: string
  readonly createdAt: string
  readonly data: Json
}

export interface WebhookSource {
  readonly name: string
  readonly streamTypes: ReadonlyArray<string>
  /** The webhook event a recorded event stands for, if any. */
  readonly fromEvent: (event: RecordedEvent) => WebhookEvent | undefined
  /**
   * For a source whose deliveries are queued by its own feature rather than the dispatcher
   * (triggers: only the endpoints a subscription names), and whose payloads are not in the log:
   * the event a delivery sends, rebuilt for its lane; undefined when the payload is gone;
   * `elsewhere` when another live process holds it (that process should run the lane).
   */
  readonly rebuild?: ((event: RecordedEvent) => WebhookEvent | undefined | "elsewhere") | undefined
}

const TERMINAL_TYPES: Readonly<Record<string, string>> = {
  ExecutionSucceeded: "execution.succeeded",
  ExecutionFailed: "execution.failed",
  ExecutionCancelled: "execution.cancelled"
}

export const executionSource: WebhookSource = {
  name: "executions",
  streamTypes: [EXECUTION_STREAM_TYPE],
  fromEvent: (event) => {
    const type = TERMINAL_TYPES[event.type]
    if (type === undefined || !isJsonObject(event.data)) return undefined
    const record = event.data.record
    if (!isJsonObject(record) || typeof record.projectId !== "string") return undefined
    const completedAt = typeof record.completedAt === "string" ? record.completedAt : new Date(event.createdAt).toISOString()
    return { eventId: event.eventId, type, projectId: record.projectId, createdAt: completedAt, data: record }
  }
}

/** The envelope sent as the request body (spec, "Webhook event envelope"). */
export const envelopeOf = (event: WebhookEvent) => ({
  id: event.eventId,
  type: event.type,
  createdAt: event.createdAt,
  projectId: event.projectId,
  data: event.data
})

/** The sources this process delivers from; features register theirs in infra/webhooks/index.ts. */
export class WebhookSources extends Context.Service<WebhookSources, ReadonlyArray<WebhookSource>>()("app/infra/WebhookSources") {}

export const sourceFor = (sources: ReadonlyArray<WebhookSource>, event: RecordedEvent): WebhookSource | undefined =>
  sources.find((source) => source.streamTypes.includes(event.streamType))

export const layer = (sources: ReadonlyArray<WebhookSource>): Layer.Layer<WebhookSources> => Layer.succeed(WebhookSources, sources)

/** The event a delivery sends, rebuilt from its source event for a lane, or why it cannot be. */
export const rebuildFrom = (
  sources: ReadonlyArray<WebhookSource>,
  event: RecordedEvent
): WebhookEvent | "source_unavailable" | "payload_unavailable" | "elsewhere" => {
  const source = sourceFor(sources, event)
  if (source?.rebuild !== undefined) return source.rebuild(event) ?? "payload_unavailable"
  return source?.fromEvent(event) ?? "source_unavailable"
}
