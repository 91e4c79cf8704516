/**
 * The service's configuration: every variable of decisions.md section 1, read once at start-up
 * and validated. A bad value stops the process with one line naming the variable.
 */
import { Context, Effect, Layer, Redacted, Result } from "effect"
import { randomBytes } from "node:crypto"

export interface RateLimitConfig {
  readonly requestsPerMinute: number
  readonly requestBurst: number
  readonly executePerMinute: number
  readonly executeBurst: number
  /** Positive: daily execution quota per project (UTC day). Undefined: off. */
  readonly dailyExecutions: number | undefined
}

export interface BootstrapKey {
  readonly key: Redacted.Redacted<string>
  readonly projectId: string
  readonly userId: string | undefined
}

export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly databaseUrl: Redacted.Redacted<string> | undefined
  readonly apiKeys: ReadonlyArray<BootstrapKey>
  /** 32 bytes; generated per process in memory mode. */
  readonly secretKey: Redacted.Redacted<Uint8Array>
  readonly secretKeyGenerated: boolean
  readonly fileMaxBytes: number
  readonly fileTtlMs: number
  readonly rateLimits: RateLimitConfig
  readonly userId: string | undefined
  readonly webhookTimeoutMs: number
  readonly webhookRetryDelaysMs: ReadonlyArray<number>
  readonly webhookAllowPrivateNetworks: boolean
  readonly triggerMinPollSeconds: number
  readonly mcpTools: "catalog" | "search"
  readonly executeSyncWaitMs: number
  readonly runnerAddress: { readonly host: string; readonly port: number } | undefined
  readonly slackApiUrl: string
  readonly githubApiUrl: string
}

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("app/src/AppConfig") {
  /** Reads `process.env`; a bad value fails the layer with a `ConfigInvalid`. */
  static readonly layerEnv = Layer.effect(AppConfig, parseConfigEffect(process.env))
  static readonly layerFrom = (env: Env) => Layer.effect(AppConfig, parseConfigEffect(env))
}

export type Env = Readonly<Record<string, string | undefined>>

/** One bad variable: `variable` names it, `message` says what was expected. */
export class ConfigInvalid extends Error {
  readonly variable: string
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`)
    this.variable = variable
    this.name = "ConfigInvalid"
  }
}

const KEY_PATTERN = /^[A-Za-z0-9_-]{16,128}$/
const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/
const MAX_INT = Number.MAX_SAFE_INTEGER

const read = (env: Env, name: string): string | undefined => {
  const value = env[name]
  return value === undefined || value.trim() === "" ? undefined : value.trim()
}

const integer = (env: Env, name: string, fallback: number, min: number, max: number = MAX_INT): number => {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigInvalid(name, `expected an integer from ${min} to ${max}, got "${raw}"`)
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigInvalid(name, `expected an integer from ${min} to ${max}, got "${raw}"`)
  }
  return value
}

const bool = (env: Env, name: string, fallback: boolean): boolean => {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const lower = raw.toLowerCase()
  if (lower === "true" || lower === "1" || lower === "yes") return true
  if (lower === "false" || lower === "0" || lower === "no") return false
  throw new ConfigInvalid(name, `expected true or false, got "${raw}"`)
}

const httpUrl = (env: Env, name: string, fallback: string): string => {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigInvalid(name, `expected an http(s) URL, got "${raw}"`)
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigInvalid(name, `expected an http(s) URL, got "${raw}"`)
  }
  return raw.replace(/\/+$/, "")
}

const parseApiKeys = (raw: string | undefined): ReadonlyArray<BootstrapKey> => {
  if (raw === undefined) return []
  const seen = new Set<string>()
  return raw.split(",").map((entry, index) => {
    const item = entry.trim()
    const eq = item.indexOf("=")
    const where = `entry ${index + 1}`
    if (eq < 0) throw new ConfigInvalid("SERVICE_API_KEYS", `${where}: expected <key>=<projectId>[/<userId>]`)
    const key = item.slice(0, eq)
    const owner = item.slice(eq + 1)
    if (!KEY_PATTERN.test(key)) throw new ConfigInvalid("SERVICE_API_KEYS", `${where}: a key must match [A-Za-z0-9_-]{16,128}`)
    if (seen.has(key)) throw new ConfigInvalid("SERVICE_API_KEYS", `${where}: duplicate key`)
    seen.add(key)
    const slash = owner.indexOf("/")
    const projectId = slash < 0 ? owner : owner.slice(0, slash)
    const userId = slash < 0 ? undefined : owner.slice(slash + 1)
    if (!ID_PATTERN.test(projectId)) throw new ConfigInvalid("SERVICE_API_KEYS", `${where}: a project id must match [A-Za-z0-9_.-]{1,64}`)
    if (userId !== undefined && !ID_PATTERN.test(userId)) {
      throw new ConfigInvalid("SERVICE_API_KEYS", `${where}: a user id must match [A-Za-z0-9_.-]{1,64}`)
    }
    return { key: Redacted.make(key), projectId, userId }
  })
}

const parseSecretKey = (raw: string | undefined, hasDatabase: boolean) => {
  if (raw === undefined) {
    if (hasDatabase) throw new ConfigInvalid("SERVICE_SECRET_KEY", "required when SERVICE_DATABASE_URL is set (32 bytes, base64)")
    return { secretKey: Redacted.make<Uint8Array>(randomBytes(32)), secretKeyGenerated: true }
  }
  const canonical = /^[A-Za-z0-9+/]*={0,2}$/.test(raw) && raw.length % 4 === 0
  const bytes = Buffer.from(raw, "base64")
  if (!canonical || bytes.length !== 32) throw new ConfigInvalid("SERVICE_SECRET_KEY", "expected 32 bytes encoded as base64")
  return { secretKey: Redacted.make<Uint8Array>(new Uint8Array(bytes)), secretKeyGenerated: false }
}

const parseRetryDelays = (raw: string | undefined): ReadonlyArray<number> => {
  if (raw === undefined) return [0, 30_000, 120_000, 600_000, 3_600_000]
  const parts = raw.split(",").map((part) => part.trim())
  if (parts.length !== 5 || parts.some((part) => !/^\d+$/.test(part) || Number(part) > 86_400_000)) {
    throw new ConfigInvalid("SERVICE_WEBHOOK_RETRY_DELAYS_MS", "expected 5 comma-separated delays in milliseconds (0..86400000)")
  }
  return parts.map(Number)
}

const parseDaily = (raw: string | undefined): number | undefined => {
  if (raw === undefined || raw.toLowerCase() === "off" || raw === "0") return undefined
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigInvalid("SERVICE_RATE_LIMIT_DAILY_EXECUTIONS", `expected a positive integer, 0 or "off", got "${raw}"`)
  }
  return Number(raw)
}

const parseRunnerAddress = (raw: string | undefined) => {
  if (raw === undefined) return undefined
  const match = /^([^:\s]+):(\d{1,5})$/.exec(raw)
  const port = match ? Number(match[2]) : 0
  if (!match || port < 1 || port > 65535) throw new ConfigInvalid("SERVICE_RUNNER_ADDRESS", `expected host:port, got "${raw}"`)
  return { host: match[1]!, port }
}

const parseDatabaseUrl = (raw: string | undefined) => {
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ConfigInvalid("SERVICE_DATABASE_URL", "expected a postgres:// URL")
  }
  if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
    throw new ConfigInvalid("SERVICE_DATABASE_URL", "expected a postgres:// URL")
  }
  return Redacted.make(raw)
}

const parseId = (name: string, raw: string | undefined) => {
  if (raw !== undefined && !ID_PATTERN.test(raw)) throw new ConfigInvalid(name, "expected [A-Za-z0-9_.-]{1,64}")
  return raw
}

/** Pure: validates `env` and returns the configuration or the first bad variable. */
export const parseConfig = (env: Env): Result.Result<AppConfigShape, ConfigInvalid> => {
  try {
    const port = integer(env, "SERVICE_PORT", 8080, 0, 65535)
    const databaseUrl = parseDatabaseUrl(read(env, "SERVICE_DATABASE_URL"))
    const mcpTools = read(env, "SERVICE_MCP_TOOLS") ?? "catalog"
    if (mcpTools !== "catalog" && mcpTools !== "search") {
      throw new ConfigInvalid("SERVICE_MCP_TOOLS", `expected "catalog" or "search", got "${mcpTools}"`)
    }
    const requestsPerMinute = integer(env, "SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE", 120, 1)
    const executePerMinute = integer(env, "SERVICE_RATE_LIMIT_EXECUTE_PER_MINUTE", 60, 1)
    return Result.succeed({
      port,
      host: read(env, "SERVICE_HOST") ?? "0.0.0.0",
      baseUrl: httpUrl(env, "SERVICE_BASE_URL", `http://localhost:${port}`),
      databaseUrl,
      apiKeys: parseApiKeys(read(env, "SERVICE_API_KEYS")),
      ...parseSecretKey(read(env, "SERVICE_SECRET_KEY"), databaseUrl !== undefined),
      fileMaxBytes: integer(env, "SERVICE_FILE_MAX_BYTES", 26_214_400, 1, 1024 * 1024 * 1024),
      fileTtlMs: integer(env, "SERVICE_FILE_TTL_MS", 3_600_000, 1),
      rateLimits: {
        requestsPerMinute,
        requestBurst: integer(env, "SERVICE_RATE_LIMIT_REQUEST_BURST", 240, 1),
        executePerMinute,
        executeBurst: integer(env, "SERVICE_RATE_LIMIT_EXECUTE_BURST", 120, 1),
        dailyExecutions: parseDaily(read(env, "SERVICE_RATE_LIMIT_DAILY_EXECUTIONS"))
      },
      userId: parseId("SERVICE_USER_ID", read(env, "SERVICE_USER_ID")),
      webhookTimeoutMs: integer(env, "SERVICE_WEBHOOK_TIMEOUT_MS", 10_000, 1, 600_000),
      webhookRetryDelaysMs: parseRetryDelays(read(env, "SERVICE_WEBHOOK_RETRY_DELAYS_MS")),
      webhookAllowPrivateNetworks: bool(env, "SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS", false),
      triggerMinPollSeconds: integer(env, "SERVICE_TRIGGER_MIN_POLL_SECONDS", 30, 1, 86_400),
      mcpTools,
      executeSyncWaitMs: integer(env, "SERVICE_EXECUTE_SYNC_WAIT_MS", 60_000, 0, 3_600_000),
      runnerAddress: parseRunnerAddress(read(env, "SERVICE_RUNNER_ADDRESS")),
      slackApiUrl: httpUrl(env, "SERVICE_SLACK_API_URL", "https://slack.com/api"),
      githubApiUrl: httpUrl(env, "SERVICE_GITHUB_API_URL", "https://api.github.com")
    })
  } catch (error) {
    if (error instanceof ConfigInvalid) return Result.fail(error)
    throw error
  }
}

function parseConfigEffect(env: Env): Effect.Effect<AppConfigShape, ConfigInvalid> {
  return Effect.suspend(() => Effect.fromResult(parseConfig(env)))
}
