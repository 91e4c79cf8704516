/**
 * Access (the spec's Authentication and rate limits): API keys, the per-project token buckets
 * and the secret key's uses (sealing, cursor MACs).
 */
import { Layer } from "effect"
import type { Migration } from "../eventlog/PgMigrations.ts"
import type { Projection } from "../eventlog/Projection.ts"
import * as ApiKeys from "./ApiKeys.ts"
import * as RateLimiter from "./RateLimiter.ts"
import * as Secrets from "./Secrets.ts"

export { ApiKeys } from "./ApiKeys.ts"
export { RateLimiter } from "./RateLimiter.ts"
export { Secrets } from "./Secrets.ts"

export const layer = Layer.mergeAll(ApiKeys.layer, RateLimiter.layer, Secrets.layer)

export const migrations: ReadonlyArray<Migration> = [...ApiKeys.accessMigrations, ...RateLimiter.rateLimitMigrations]
export const projections: ReadonlyArray<Projection> = []
