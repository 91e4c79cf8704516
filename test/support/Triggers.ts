/** Helpers for trigger tests through HTTP: endpoints, connections, subscriptions, ingest calls, history. */
import { slackSignature } from "../../domain/triggers/PushBody.ts"
import { type Client, KEY } from "./Service.ts"

export interface CreatedSubscription {
  readonly subscriptionId: string
  readonly ingestUrl?: string
  readonly [field: string]: unknown
}

export interface TriggerEventRow {
  readonly arrivalId: string
  readonly eventId: string
  readonly subscriptionId: string
  readonly trigger: string
  readonly dedupStatus: string
  readonly deliveryStatus: string
  readonly deliveryMode: string
  readonly requestedWebhookEndpointIds: ReadonlyArray<string>
  readonly deliveryTargets: ReadonlyArray<{ readonly endpointId: string; readonly deliveryId: string; readonly status: string }>
  readonly receivedAt: string
  readonly occurredAt: string
  readonly expiresAt: string
}

const json = async <A>(response: Response, status: number): Promise<A> => {
  const text = await response.text()
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}: ${text}`)
  return JSON.parse(text) as A
}

export const createTriggerEndpoint = async (client: Client, url: string, options: { readonly key?: string; readonly events?: ReadonlyArray<string>; readonly active?: boolean } = {}) =>
  json<{ endpointId: string; secret: string }>(
    await client.fetch("/v1/webhooks", { method: "POST", key: options.key ?? KEY, json: { url, events: options.events ?? ["trigger.*"], active: options.active ?? true } }),
    201
  )

export const createConnection = async (client: Client, body: Record<string, unknown>, key: string = KEY) =>
  json<{ connectionId: string }>(await client.fetch("/v1/connections", { method: "POST", key, json: body }), 201)

export const subscribe = async (client: Client, body: Record<string, unknown>, key: string = KEY) =>
  json<CreatedSubscription>(await client.fetch("/v1/subscriptions", { method: "POST", key, json: body }), 201)

/** The path of an ingest URL (tests call the service they started, whatever its base URL says). */
export const ingestPath = (subscription: CreatedSubscription): string => new URL(subscription.ingestUrl ?? "").pathname

export const slackCallback = (eventId: string, event: Record<string, unknown> = {}) => ({
  type: "event_callback",
  team_id: "T1",
  event_id: eventId,
  event_time: Math.floor(Date.now() / 1000),
  event: { type: "message", channel: "C1", user: "U1", text: "hello", ts: "1700000000.000100", ...event }
})

/** POSTs a body to an ingest path with no API key; signed like Slack when `signingSecret` is given. */
export const postIngest = (client: Client, path: string, body: unknown, options: { readonly signingSecret?: string; readonly headers?: Record<string, string> } = {}) => {
  const raw = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body)
  const timestamp = String(Math.floor(Date.now() / 1000))
  const signed = options.signingSecret === undefined
    ? {}
    : { "x-slack-request-timestamp": timestamp, "x-slack-signature": slackSignature(options.signingSecret, timestamp, raw) }
  return client.fetch(path, { method: "POST", key: null, body: raw, headers: { "content-type": "application/json", ...signed, ...options.headers } })
}

export const history = async (client: Client, query = "", key: string = KEY): Promise<ReadonlyArray<TriggerEventRow>> =>
  (await json<{ triggerEvents: ReadonlyArray<TriggerEventRow> }>(await client.fetch(`/v1/trigger-events${query}`, { key }), 200)).triggerEvents

/** Every history row of a query, page by page. */
export const allHistory = async (client: Client, query = "", key: string = KEY): Promise<ReadonlyArray<TriggerEventRow>> => {
  const rows: Array<TriggerEventRow> = []
  let cursor: string | undefined
  do {
    const separator = query === "" ? "?" : "&"
    const page = await json<{ triggerEvents: ReadonlyArray<TriggerEventRow>; nextCursor?: string }>(
      await client.fetch(`/v1/trigger-events${query}${cursor === undefined ? "" : `${separator}cursor=${encodeURIComponent(cursor)}`}`, { key }),
      200
    )
    rows.push(...page.triggerEvents)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  return rows
}
