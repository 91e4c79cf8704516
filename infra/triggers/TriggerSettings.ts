/**
 * Trigger settings (decisions.md section 1): the ingest URL's base, the lower bound of polling
 * cadences (tests set 1 s), the GitHub API root the pollers call (SERVICE_GITHUB_API_URL, read
 * with the other provider URLs), and how many bytes of trigger payloads this process keeps while
 * their deliveries are unfinished (payloads are never written to the database).
 */
import { Effect } from "effect"
import { providerUrls } from "../providers/index.ts"
import { MAX_POLL_SECONDS } from "../../domain/triggers/Polling.ts"
import { httpUrl, integer } from "../Settings.ts"

export { DEFAULT_POLL_SECONDS, MAX_POLL_SECONDS } from "../../domain/triggers/Polling.ts"

export const minPollSeconds = integer("SERVICE_TRIGGER_MIN_POLL_SECONDS", 30, 1, MAX_POLL_SECONDS)

export const payloadCacheBytes = integer("SERVICE_TRIGGER_PAYLOAD_CACHE_BYTES", 256 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024)

const MIB = 1024 * 1024

/**
 * The ingest budget of a project in one process (TriggerIngest.ts): bytes of accepted bodies a
 * minute (0 turns it off) and at once. The burst holds at least one body of the 1 MiB ceiling.
 */
export const ingestBudget = Effect.gen(function*() {
  const perMinute = yield* integer("SERVICE_INGEST_BYTES_PER_MINUTE", 64 * MIB, 0)
  const burst = yield* integer("SERVICE_INGEST_BURST_BYTES", 16 * MIB, MIB)
  return perMinute === 0 ? undefined : { perMinute, burst }
})

export const triggerSettings = Effect.gen(function*() {
  const port = yield* integer("SERVICE_PORT", 8080, 0, 65535)
  return {
    baseUrl: yield* httpUrl("SERVICE_BASE_URL", `http://localhost:${port}`),
    minPollSeconds: yield* minPollSeconds,
    githubApiUrl: (yield* providerUrls).githubApiUrl,
    payloadCacheBytes: yield* payloadCacheBytes
  }
})
