/**
 * The access settings (decisions.md section 1): bootstrap keys, the secret key and the rate
 * limits, read through `Config` where the access services are built.
 */
import { Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import { type ConfigInvalid, integer, isId, parsed, Rejected } from "../Settings.ts"

export interface BootstrapKey {
  readonly key: Redacted.Redacted<string>
  readonly projectId: string
  readonly userId: string | undefined
}

const KEY_PATTERN = /^[A-Za-z0-9_-]{16,128}$/

/** SERVICE_API_KEYS: `<key>=<projectId>` or `<key>=<projectId>/<userId>`, comma separated. */
export const bootstrapKeys = parsed("SERVICE_API_KEYS", (raw): ReadonlyArray<BootstrapKey> | Rejected => {
  if (raw === undefined) return []
  const seen = new Set<string>()
  const keys: Array<BootstrapKey> = []
  for (const [index, entry] of raw.split(",").entries()) {
    const item = entry.trim()
    const where = `entry ${index + 1}`
    const eq = item.indexOf("=")
    if (eq < 0) return new Rejected(`${where}: expected <key>=<projectId>[/<userId>]`)
    const key = item.slice(0, eq)
    const owner = item.slice(eq + 1)
    if (!KEY_PATTERN.test(key)) return new Rejected(`${where}: a key must match [A-Za-z0-9_-]{16,128}`)
    if (seen.has(key)) return new Rejected(`${where}: duplicate key`)
    seen.add(key)
    const slash = owner.indexOf("/")
    const projectId = slash < 0 ? owner : owner.slice(0, slash)
    const userId = slash < 0 ? undefined : owner.slice(slash + 1)
    if (!isId(projectId)) return new Rejected(`${where}: a project id must match [A-Za-z0-9_.-]{1,64}`)
    if (userId !== undefined && !isId(userId)) return new Rejected(`${where}: a user id must match [A-Za-z0-9_.-]{1,64}`)
    keys.push({ key: Redacted.make(key), projectId, userId })
  }
  return keys
})

/**
 * SERVICE_SECRET_KEY: 32 bytes as base64; required with a database, generated for this process
 * in memory mode (where nothing it sealed outlives the process).
 */
export const secretKey = (required: boolean) =>
  parsed("SERVICE_SECRET_KEY", (raw): Redacted.Redacted<Uint8Array> | Rejected => {
    if (raw === undefined) {
      return required
        ? new Rejected("required when SERVICE_DATABASE_URL is set (32 bytes, base64)")
        : Redacted.make<Uint8Array>(new Uint8Array(randomBytes(32)))
    }
    const canonical = /^[A-Za-z0-9+/]*={0,2}$/.test(raw) && raw.length % 4 === 0
    const bytes = Buffer.from(raw, "base64")
    return canonical && bytes.length === 32
      ? Redacted.make<Uint8Array>(new Uint8Array(bytes))
      : new Rejected("expected 32 bytes encoded as base64")
  })

/**
 * SERVICE_SECRET_KEY_PREVIOUS: the key being rotated away from (32 bytes, base64), optional.
 * What it sealed still opens while `secrets reseal` moves it under SERVICE_SECRET_KEY.
 */
export const previousSecretKey = parsed("SERVICE_SECRET_KEY_PREVIOUS", (raw): Redacted.Redacted<Uint8Array> | undefined | Rejected => {
  if (raw === undefined) return undefined
  const canonical = /^[A-Za-z0-9+/]*={0,2}$/.test(raw) && raw.length % 4 === 0
  const bytes = Buffer.from(raw, "base64")
  return canonical && bytes.length === 32 ? Redacted.make<Uint8Array>(new Uint8Array(bytes)) : new Rejected("expected 32 bytes encoded as base64")
})

export interface RateLimitSettings {
  readonly requestsPerMinute: number
  readonly requestBurst: number
  readonly executePerMinute: number
  readonly executeBurst: number
  /** Positive: daily execution quota per project (UTC day). Undefined: off. */
  readonly dailyExecutions: number | undefined
}

export const rateLimits: Effect.Effect<RateLimitSettings, ConfigInvalid> = Effect.all({
  requestsPerMinute: integer("SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE", 120, 1),
  requestBurst: integer("SERVICE_RATE_LIMIT_REQUEST_BURST", 240, 1),
  executePerMinute: integer("SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE", 60, 1),
  executeBurst: integer("SERVICE_RATE_LIMIT_EXECUTE_BURST", 120, 1),
  dailyExecutions: parsed("SERVICE_RATE_LIMIT_DAILY_EXECUTIONS", (raw): number | undefined | Rejected => {
    if (raw === undefined || raw.toLowerCase() === "off" || raw === "0") return undefined
    return /^\d+$/.test(raw) && Number.isSafeInteger(Number(raw))
      ? Number(raw)
      : new Rejected(`expected a positive integer, 0 or "off", got "${raw}"`)
  })
})
