/**
 * Trigger payloads, kept in this process only (spec, "Delivery rules" 9; decisions.md section 5):
 * never written to the database, held while their deliveries may still need them, and bounded
 * in bytes (SERVICE_TRIGGER_PAYLOAD_CACHE_BYTES, 256 MiB by default): when full, the least recently
 * used payload of the project holding the most goes first, so one project's flood evicts its own
 * payloads and never those of a project holding less; anything older than the whole retry schedule
 * goes anyway. A delivery whose payload is gone, after a restart or an eviction, fails with
 * `payload_unavailable`.
 *
 * Each entry is the webhook event the payload's deliveries send, keyed by its eventId.
 */
import { Context, Effect, Layer } from "effect"
import { BoundedCache } from "../BoundedCache.ts"
import type { WebhookEvent } from "../webhooks/WebhookSources.ts"
import { payloadCacheBytes } from "./TriggerSettings.ts"

/** Longer than the five attempts' default schedule (1 h 12 min 30 s) with room to spare. */
export const PAYLOAD_TTL_MS = 3 * 60 * 60 * 1000
/**
 * How much newer than an arrival the list of live incarnations must be to say its owner is gone:
 * the arrival's time is the database's, the list's this process's clock.
 */
const ALIVE_MARGIN_MS = 2_000
/** What an entry costs beyond its JSON text: the objects around it. */
const ENTRY_OVERHEAD_BYTES = 512

export interface TriggerPayloadsShape {
  readonly get: (eventId: string) => WebhookEvent | undefined
  readonly set: (event: WebhookEvent) => void
  readonly bytes: () => number
  /** Takes note of an incarnation of this process that admits events (their `owner`). */
  readonly own: (incarnationId: string) => void
  /**
   * The live incarnations of every process, as read when `readAtMs` began (TriggerFanout.ts
   * refreshes it every few seconds).
   */
  readonly setAlive: (incarnationIds: ReadonlySet<string>, readAtMs: number) => void
  /**
   * The event, or `elsewhere` when the incarnation that admitted it (at `admittedAtMs`) is
   * another process's and is alive (its payload is there), or undefined when the payload is gone.
   * An owner missing from a list read before it admitted the event (a peer that started since)
   * is not known to be gone: `elsewhere`, and a later ask meets a newer list.
   */
  readonly locate: (eventId: string, owner: string | undefined, admittedAtMs: number) => WebhookEvent | "elsewhere" | undefined
}

export class TriggerPayloads extends Context.Service<TriggerPayloads, TriggerPayloadsShape>()("app/infra/triggers/TriggerPayloads") {}

export const makePayloads = (maxBytes: number): TriggerPayloadsShape => {
  const cache = new BoundedCache<string, { readonly event: WebhookEvent; readonly bytes: number }>({
    maxWeight: maxBytes,
    weigh: (entry) => entry.bytes,
    ttlMs: PAYLOAD_TTL_MS,
    groupOf: (entry) => entry.event.projectId
  })
  const mine = new Set<string>()
  let alive: ReadonlySet<string> = new Set()
  let aliveReadAtMs = Number.NEGATIVE_INFINITY
  return {
    get: (eventId) => cache.get(eventId)?.event,
    set: (event) => cache.set(event.eventId, { event, bytes: 2 * JSON.stringify(event.data).length + ENTRY_OVERHEAD_BYTES }),
    bytes: () => cache.totalWeight,
    own: (incarnationId) => void mine.add(incarnationId),
    setAlive: (incarnationIds, readAtMs) => {
      alive = incarnationIds
      aliveReadAtMs = readAtMs
    },
    locate: (eventId, owner, admittedAtMs) => {
      const event = cache.get(eventId)?.event
      if (event !== undefined) return event
      if (owner === undefined || mine.has(owner)) return undefined
      return alive.has(owner) || aliveReadAtMs < admittedAtMs + ALIVE_MARGIN_MS ? "elsewhere" : undefined
    }
  }
}

/** One cache per process: the webhook lanes and the triggers feature share this layer's instance. */
export const layer = Layer.effect(TriggerPayloads, Effect.map(Effect.orDie(payloadCacheBytes), makePayloads))
