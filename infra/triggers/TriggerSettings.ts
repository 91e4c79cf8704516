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

export const triggerSettings = Effect.gen(function*() {
  const port = yield* integer("SERVICE_PORT", 8080, 0, 65535)
  return {
    baseUrl: yield* httpUrl("SERVICE_BASE_URL", `http://localhost:${port}`),
    minPollSeconds: yield* minPollSeconds,
    githubApiUrl: (yield* providerUrls).githubApiUrl,
    payloadCacheBytes: yield* payloadCacheBytes
  }
})
