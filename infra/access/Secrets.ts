/**
 * Keys derived from SERVICE_SECRET_KEY: sealing (AES-256-GCM) for webhook signing secrets and
 * connection credentials at rest, and a MAC key for tamper-evident list cursors. Each purpose
 * gets its own subkey, so a cursor MAC can never open a sealed secret.
 *
 * Rotation (docs/operations.md): with SERVICE_SECRET_KEY_PREVIOUS set, what the previous key
 * sealed or MACed still opens and verifies, while everything new is sealed under the current
 * key; `secrets reseal` (src/cli/Secrets.ts) then re-seals the old values, after which the
 * previous key can go. Whether the key opens the data at all is checked at start (KeyCheck.ts).
 * A MAC whose data is not kept cannot be redone under a new key: `stableMac` is for those
 * (idempotency claims), under a key of the database's own (DurableSecrets.ts).
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto"
import { isDurable } from "../eventlog/Database.ts"
import { previousSecretKey, secretKey } from "./AccessSettings.ts"

export interface SecretsShape {
  /**
   * Seals UTF-8 text: `v1.<iv>.<ciphertext>.<tag>`, base64url parts. With a `context` (authenticated,
   * not carried), the value opens only with the same context: an id bound to its session.
   */
  readonly seal: (plaintext: string, context?: string) => string
  /**
   * Opens a sealed value; undefined when it was tampered with, sealed under another key, or
   * sealed with another context.
   */
  readonly open: (sealed: string, context?: string) => string | undefined
  /** A MAC over `data` for `purpose`, base64url. */
  readonly mac: (purpose: string, data: string) => string
  /** The MAC under the previous key, while one is configured (a claim made before a rotation). */
  readonly previousMac: (purpose: string, data: string) => string | undefined
  /**
   * A MAC over `data` for `purpose` that outlives a rotation of SERVICE_SECRET_KEY, for what
   * cannot be MACed again because its data is not kept (idempotency claims). With a database, under
   * a random key of the database's own, kept sealed (DurableSecrets.ts); in memory, `mac`.
   */
  readonly stableMac: (purpose: string, data: string) => string
  /** Compares in constant time; `length` truncates the expected MAC to the given characters. */
  readonly verifyMac: (purpose: string, data: string, mac: string, length?: number) => boolean
}

export class Secrets extends Context.Service<Secrets, SecretsShape>()("app/infra/Secrets") {}

const subkey = (master: Uint8Array, purpose: string) =>
  Buffer.from(hkdfSync("sha256", master, Buffer.alloc(0), `service/${purpose}`, 32))

/** What the sealed format looks like: `v1.<iv: 12 bytes>.<ciphertext>.<tag: 16 bytes>`, base64url parts. */
export const SEALED = /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{22}$/

/** MACs under a subkey of `master`, `purpose` and `data` separated by a NUL, base64url. */
export const macUnder = (master: Uint8Array) => {
  // A KeyObject, made once: an HMAC keyed by raw bytes builds one on every call (a third of the
  // cost of a small MAC).
  const macKey = createSecretKey(subkey(master, "mac/v1"))
  return (purpose: string, data: string) =>
    createHmac("sha256", macKey).update(purpose).update("\u0000").update(data).digest("base64url")
}

/** One master key's subkeys. */
const keysOf = (master: Uint8Array) => {
  // A KeyObject, made once: creating ciphers from it is ~5x cheaper than from raw bytes.
  const sealKey = createSecretKey(subkey(master, "seal/v1"))
  return {
    mac: macUnder(master),
    seal: (plaintext: string, context?: string) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", sealKey, iv)
      if (context !== undefined) cipher.setAAD(Buffer.from(context, "utf8"))
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return ["v1", iv.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(".")
    },
    open: (sealed: string, context?: string): string | undefined => {
      const [version, iv, body, tag] = sealed.split(".")
      if (version !== "v1" || iv === undefined || body === undefined || tag === undefined) return undefined
      try {
        const decipher = createDecipheriv("aes-256-gcm", sealKey, Buffer.from(iv, "base64url"))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        if (context !== undefined) decipher.setAAD(Buffer.from(context, "utf8"))
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
      } catch {
        return undefined
      }
    }
  }
}

/** A key's public name: 16 characters of a MAC under it of a fixed text. */
export const keyId = (keys: { readonly mac: (purpose: string, data: string) => string }): string => keys.mac("key-id", "service").slice(0, 16)

const sameMac = (expected: string, given: string, length: number | undefined) => {
  const a = Buffer.from(length === undefined ? expected : expected.slice(0, length))
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** What `reseal` found a sealed value to be. */
export type Resealed =
  | { readonly _tag: "Current" }
  | { readonly _tag: "Resealed"; readonly sealed: string }
  | { readonly _tag: "Unreadable" }

export interface KeyRing extends SecretsShape {
  /**
   * Short public names of the keys (a MAC of a fixed text, which reveals nothing of a key): the
   * current one's and, during a rotation, the previous one's. A running process records them
   * (actors/Runner.ts), so `secrets reseal` can tell whether every process holds the new key.
   */
  readonly ids: ReadonlyArray<string>
  /** Seals under the previous key, while one is configured (a rolling restart, SealingKey.ts). */
  readonly sealUnderPrevious: ((plaintext: string, context?: string) => string) | undefined
  /** True when the previous key (not the current one) opens `sealed`. */
  readonly openedByPrevious: (sealed: string) => boolean
  /** `sealed` under the current key: as it is, re-sealed from the previous key, or unreadable. */
  readonly reseal: (sealed: string) => Resealed
}

/** The current key, and the previous one while a rotation is under way. */
export const makeKeyRing = (master: Uint8Array, previousMaster?: Uint8Array): KeyRing => {
  const current = keysOf(master)
  const previous = previousMaster === undefined ? undefined : keysOf(previousMaster)
  const open = (sealed: string, context?: string) => current.open(sealed, context) ?? previous?.open(sealed, context)
  return {
    ids: [current, ...(previous === undefined ? [] : [previous])].map(keyId),
    seal: current.seal,
    open,
    mac: current.mac,
    previousMac: (purpose, data) => previous?.mac(purpose, data),
    stableMac: current.mac,
    sealUnderPrevious: previous?.seal,
    verifyMac: (purpose, data, given, length) =>
      sameMac(current.mac(purpose, data), given, length) ||
      (previous !== undefined && sameMac(previous.mac(purpose, data), given, length)),
    openedByPrevious: (sealed) => current.open(sealed) === undefined && previous?.open(sealed) !== undefined,
    reseal: (sealed) => {
      if (current.open(sealed) !== undefined) return { _tag: "Current" }
      const plaintext = previous?.open(sealed)
      return plaintext === undefined ? { _tag: "Unreadable" } : { _tag: "Resealed", sealed: current.seal(plaintext) }
    }
  }
}

export const makeSecrets = (master: Uint8Array, previousMaster?: Uint8Array): SecretsShape => makeKeyRing(master, previousMaster)

/** The key ring of SERVICE_SECRET_KEY (and SERVICE_SECRET_KEY_PREVIOUS), as configured. */
export const keyRingOf = (durable: boolean) =>
  Effect.gen(function*() {
    const key = yield* secretKey(durable)
    const previous = yield* previousSecretKey
    return makeKeyRing(Redacted.value(key), previous === undefined ? undefined : Redacted.value(previous))
  })

/** The key ring as configured, for the storage in use (a key is required with a database). */
export const keyRing = Effect.flatMap(isDurable, keyRingOf)

/**
 * In memory: SERVICE_SECRET_KEY, or a key generated for this process. With a database the
 * service runs DurableSecrets.ts's layer instead (the key check, the database's own MAC key).
 */
export const layerMemory = Layer.effect(Secrets, keyRingOf(false))
