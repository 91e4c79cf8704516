/**
 * Keys derived from SERVICE_SECRET_KEY: sealing (AES-256-GCM) for webhook signing secrets and
 * connection credentials at rest, and a MAC key for tamper-evident list cursors. Each purpose
 * gets its own subkey, so a cursor MAC can never open a sealed secret.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual } from "node:crypto"
import { isDurable } from "../eventlog/Database.ts"
import { secretKey } from "./AccessSettings.ts"

export interface SecretsShape {
  /** Seals UTF-8 text: `v1.<iv>.<ciphertext>.<tag>`, base64url parts. */
  readonly seal: (plaintext: string) => string
  /** Opens a sealed value; undefined when it was tampered with or sealed under another key. */
  readonly open: (sealed: string) => string | undefined
  /** A MAC over `data` for `purpose`, base64url. */
  readonly mac: (purpose: string, data: string) => string
  /** Compares in constant time; `length` truncates the expected MAC to the given characters. */
  readonly verifyMac: (purpose: string, data: string, mac: string, length?: number) => boolean
}

export class Secrets extends Context.Service<Secrets, SecretsShape>()("app/infra/Secrets") {}

const subkey = (master: Uint8Array, purpose: string) =>
  Buffer.from(hkdfSync("sha256", master, Buffer.alloc(0), `service/${purpose}`, 32))

export const makeSecrets = (master: Uint8Array): SecretsShape => {
  // A KeyObject, made once: creating ciphers from it is ~5x cheaper than from raw bytes.
  const sealKey = createSecretKey(subkey(master, "seal/v1"))
  // A KeyObject, made once: an HMAC keyed by raw bytes builds one on every call (a third of the
  // cost of a small MAC).
  const macKey = createSecretKey(subkey(master, "mac/v1"))
  const mac = (purpose: string, data: string) =>
    createHmac("sha256", macKey).update(purpose).update("\u0000").update(data).digest("base64url")
  return {
    seal: (plaintext) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", sealKey, iv)
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return ["v1", iv.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(".")
    },
    open: (sealed) => {
      const [version, iv, body, tag] = sealed.split(".")
      if (version !== "v1" || iv === undefined || body === undefined || tag === undefined) return undefined
      try {
        const decipher = createDecipheriv("aes-256-gcm", sealKey, Buffer.from(iv, "base64url"))
        decipher.setAuthTag(Buffer.from(tag, "base64url"))
        return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8")
      } catch {
        return undefined
      }
    },
    mac,
    verifyMac: (purpose, data, given, length) => {
      const full = mac(purpose, data)
      const expected = Buffer.from(length === undefined ? full : full.slice(0, length))
      const actual = Buffer.from(given)
      return expected.length === actual.length && timingSafeEqual(expected, actual)
    }
  }
}

/** SERVICE_SECRET_KEY, required with a database and generated for this process without one. */
export const layer = Layer.effect(
  Secrets,
  Effect.gen(function*() {
    const key = yield* secretKey(yield* isDurable)
    return makeSecrets(Redacted.value(key))
  })
)
