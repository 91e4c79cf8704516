/**
 * Project API keys: bootstrap keys from SERVICE_API_KEYS and, with a database, keys created by
 * the command line. Only SHA-256 hashes are kept; a presented key is hashed and looked up by its
 * hash (a database row's hash is also compared in constant time). Database answers are cached
 * for a few seconds, so a revocation takes effect within `CACHE_MS` in every process.
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { hash as digest, randomBytes, timingSafeEqual } from "node:crypto"
import { BoundedCache } from "../BoundedCache.ts"
import { onStorage } from "../eventlog/Database.ts"
import type { Migration } from "../eventlog/PgMigrations.ts"
import { type BootstrapKey, bootstrapKeys } from "./AccessSettings.ts"
import { StoreUnavailable } from "../eventlog/EventStore.ts"
import { newId } from "../Ids.ts"

export interface Principal {
  readonly keyId: string
  readonly projectId: string
  /** Set for user-pinned keys. */
  readonly userId: string | undefined
}

export interface KeyRecord extends Principal {
  readonly prefix: string
  readonly createdAt: string
  readonly revokedAt: string | undefined
}

export interface ApiKeysShape {
  readonly verify: (presented: string) => Effect.Effect<Principal | undefined, StoreUnavailable>
  /** The principal of a key known without asking the database (bootstrap or cached); else undefined. */
  readonly known: (presented: string) => Principal | undefined
  /**
   * Whether `verify` would ask the store about this key: neither a bootstrap key nor one whose
   * verdict (valid or unknown) is cached. Never in memory. Only such lookups are throttled per
   * client address (http/server/Gate.ts).
   */
  readonly costsLookup: (presented: string) => boolean
  readonly create: (owner: { readonly projectId: string; readonly userId?: string | undefined }) => Effect.Effect<
    { readonly key: Redacted.Redacted<string>; readonly record: KeyRecord },
    StoreUnavailable
  >
  readonly list: (projectId?: string) => Effect.Effect<ReadonlyArray<KeyRecord>, StoreUnavailable>
  readonly revoke: (keyId: string) => Effect.Effect<boolean, StoreUnavailable>
}

export class ApiKeys extends Context.Service<ApiKeys, ApiKeysShape>()("app/infra/ApiKeys") {}

const CACHE_MS = 5_000
const KEY_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// One-shot hashing: several times cheaper than a Hash object for a short input.
export const hashKey = (key: string): Buffer => digest("sha256", key, "buffer")

/**
 * The hash as hex, the form the maps are keyed by (once per request): straight to a string is
 * cheaper than a Buffer and its hex copy. A lookup by the full SHA-256 leaks nothing through its
 * timing that would help to find a key.
 */
const hashHex = (key: string): string => digest("sha256", key, "hex")

/** A new key: `sk_` and 40 base62 characters (about 238 bits). */
export const generateKey = (): string => {
  const bytes = randomBytes(40)
  let out = "sk_"
  for (const byte of bytes) out += KEY_ALPHABET[byte % KEY_ALPHABET.length]
  return out
}

const sameHash = (a: Uint8Array, b: Uint8Array) => a.length === b.length && timingSafeEqual(a, b)

/** The bootstrap keys' principals by hex hash. */
const bootstrapPrincipals = (keys: ReadonlyArray<BootstrapKey>) => {
  const byHash = new Map<string, Principal>()
  for (const [i, entry] of keys.entries()) {
    byHash.set(hashHex(Redacted.value(entry.key)), {
      keyId: `key_bootstrap_${i + 1}`,
      projectId: entry.projectId,
      userId: entry.userId
    })
  }
  return byHash
}

/** Memory mode: bootstrap keys, plus a printed dev key for `proj_dev` when none is configured. */
export const layerMemory = Layer.effect(
  ApiKeys,
  Effect.gen(function*() {
    const byHash = bootstrapPrincipals(yield* bootstrapKeys)
    const created = new Map<string, KeyRecord>()
    const create: ApiKeysShape["create"] = (owner) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const key = generateKey()
        const record: KeyRecord = {
          keyId: newId("key"),
          projectId: owner.projectId,
          userId: owner.userId,
          prefix: key.slice(0, 10),
          createdAt: new Date(now).toISOString(),
          revokedAt: undefined
        }
        created.set(hashHex(key), record)
        return { key: Redacted.make(key), record }
      })
    const known = (presented: string) => {
      const hex = hashHex(presented)
      const bootstrap = byHash.get(hex)
      if (bootstrap !== undefined) return bootstrap
      const found = created.get(hex)
      return found?.revokedAt === undefined ? found : undefined
    }
    return ApiKeys.of({
      verify: (presented) => Effect.sync(() => known(presented)),
      known,
      costsLookup: () => false,
      create,
      list: (projectId) =>
        Effect.sync(() =>
          [...created.values()].filter((r) => projectId === undefined || r.projectId === projectId)
        ),
      revoke: (keyId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          for (const [hex, record] of created) {
            if (record.keyId === keyId && record.revokedAt === undefined) {
              created.set(hex, { ...record, revokedAt: new Date(now).toISOString() })
              return true
            }
          }
          return false
        })
    })
  })
)

interface KeyRow {
  readonly key_id: string
  readonly key_hash: Uint8Array
  readonly key_prefix: string
  readonly project_id: string
  readonly user_id: string | null
  readonly created_at: Date
  readonly revoked_at: Date | null
}

const toRecord = (row: KeyRow): KeyRecord => ({
  keyId: row.key_id,
  projectId: row.project_id,
  userId: row.user_id ?? undefined,
  prefix: row.key_prefix,
  createdAt: row.created_at.toISOString(),
  revokedAt: row.revoked_at?.toISOString()
})

const unavailable = (cause: unknown) => new StoreUnavailable({ cause })

export const layerPg = Layer.effect(
  ApiKeys,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const byHash = bootstrapPrincipals(yield* bootstrapKeys)
    // Known and unknown keys are cached apart, so a flood of made-up keys can only evict other
    // made-up keys, never a valid one in use.
    const known = new BoundedCache<string, Principal>({ maxWeight: 10_000, ttlMs: CACHE_MS })
    const unknown = new BoundedCache<string, true>({ maxWeight: 10_000, ttlMs: CACHE_MS })

    const lookup = (hash: Buffer) =>
      sql<KeyRow>`SELECT * FROM api_keys WHERE key_hash = ${hash} AND revoked_at IS NULL`.pipe(
        Effect.map((rows) => {
          const row = rows[0]
          return row !== undefined && sameHash(Buffer.from(row.key_hash), hash) ? toRecord(row) : undefined
        }),
        Effect.mapError(unavailable)
      )

    const cachedOrLookup = (cacheKey: string, now: number): Effect.Effect<Principal | undefined, StoreUnavailable> => {
      const cached = known.get(cacheKey, now)
      if (cached !== undefined) return Effect.succeed(cached)
      if (unknown.get(cacheKey, now) !== undefined) return Effect.succeed(undefined)
      return Effect.tap(lookup(Buffer.from(cacheKey, "hex")), (principal) =>
        Effect.sync(() => {
          if (principal === undefined) unknown.set(cacheKey, true, now)
          else known.set(cacheKey, principal, now)
        }))
    }

    return ApiKeys.of({
      known: (presented) => {
        const cacheKey = hashHex(presented)
        return byHash.get(cacheKey) ?? known.get(cacheKey)
      },
      costsLookup: (presented) => {
        const cacheKey = hashHex(presented)
        return !byHash.has(cacheKey) && known.get(cacheKey) === undefined && unknown.get(cacheKey) === undefined
      },
      verify: (presented) =>
        Effect.suspend(() => {
          const cacheKey = hashHex(presented)
          const bootstrap = byHash.get(cacheKey)
          if (bootstrap !== undefined) return Effect.succeed(bootstrap)
          return Effect.flatMap(Clock.currentTimeMillis, (now) => cachedOrLookup(cacheKey, now))
        }),
      create: Effect.fnUntraced(function*(owner) {
        const key = generateKey()
        const rows = yield* sql<KeyRow>`
          INSERT INTO api_keys (key_id, key_hash, key_prefix, project_id, user_id)
          VALUES (${newId("key")}, ${hashKey(key)}, ${key.slice(0, 10)}, ${owner.projectId}, ${owner.userId ?? null})
          RETURNING *`.pipe(Effect.mapError(unavailable))
        return { key: Redacted.make(key), record: toRecord(rows[0]!) }
      }),
      list: (projectId) =>
        (projectId === undefined
          ? sql<KeyRow>`SELECT * FROM api_keys ORDER BY created_at`
          : sql<KeyRow>`SELECT * FROM api_keys WHERE project_id = ${projectId} ORDER BY created_at`).pipe(
          Effect.map((rows) => rows.map(toRecord)),
          Effect.mapError(unavailable)
        ),
      revoke: (keyId) =>
        sql<{ key_id: string }>`UPDATE api_keys SET revoked_at = now() WHERE key_id = ${keyId} AND revoked_at IS NULL RETURNING key_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.tap(() => Effect.sync(() => known.clear())),
          Effect.mapError(unavailable)
        )
    })
  })
)

export const layer = onStorage(layerMemory, layerPg)

/** The keys' table and the rate limiter's (RateLimiter.ts), created together in the first schema. */
export const accessMigrations: ReadonlyArray<Migration> = [
  {
    id: 2,
    name: "api_keys_and_rate_limits",
    statements: [
      `CREATE TABLE api_keys (
        key_id text PRIMARY KEY,
        key_hash bytea NOT NULL UNIQUE,
        key_prefix text NOT NULL,
        project_id text NOT NULL,
        user_id text,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`,
      `CREATE TABLE rate_buckets (
        bucket text PRIMARY KEY,
        tokens double precision NOT NULL,
        updated_ms bigint NOT NULL
      )`,
      `CREATE TABLE rate_quotas (
        bucket text NOT NULL,
        day date NOT NULL,
        used bigint NOT NULL,
        PRIMARY KEY (bucket, day)
      )`
    ]
  }
]
