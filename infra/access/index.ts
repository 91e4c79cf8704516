/**
 * Access (the spec's Authentication and rate limits): API keys, the per-project token buckets
 * and the secret key's uses (sealing, cursor MACs).
 */
import { Layer } from "effect"
import { onStorage } from "../eventlog/Database.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as ApiKeys from "./ApiKeys.ts"
import * as DurableSecrets from "./DurableSecrets.ts"
import * as KeyCheck from "./KeyCheck.ts"
import * as PgRateLimiter from "./PgRateLimiter.ts"
import * as RateLimiter from "./RateLimiter.ts"
import * as Secrets from "./Secrets.ts"

export { ApiKeys } from "./ApiKeys.ts"
export { RateLimiter } from "./RateLimiter.ts"
export { Secrets } from "./Secrets.ts"

/**
 * With a database, the secrets are built after the key check: a key that does not open the data
 * stops the start (KeyCheck.ts, DurableSecrets.ts).
 */
export const layer = Layer.mergeAll(
  ApiKeys.layer,
  onStorage(RateLimiter.layerMemory, PgRateLimiter.layerPg),
  onStorage(Secrets.layerMemory, DurableSecrets.layer)
)

export const migrations: ReadonlyArray<Migration> = [
  ...ApiKeys.accessMigrations,
  ...PgRateLimiter.rateLimitMigrations,
  ...KeyCheck.keyCheckMigrations,
  ...DurableSecrets.idempotencyKeyMigrations
]
export const projections: ReadonlyArray<Projection> = []
export const streamTypes: ReadonlyArray<string> = []
