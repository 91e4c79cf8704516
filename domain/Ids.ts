/**
 * Branded identifiers. An id is `<prefix>_<body>`, the body 32 lower-case Crockford base32
 * characters: 48 bits of creation time (milliseconds) then 112 random bits, so ids sort by
 * creation time and still serve as bearer capabilities. Generation lives in infra (it needs a
 * clock and randomness); this module only encodes and validates.
 */
import { Schema } from "effect"

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
export const ID_BODY_LENGTH = 32
export const ID_RANDOM_BYTES = 14

// The `u` flag lets Effect export a pattern into JSON Schema (whose patterns are Unicode ones).
const idPattern = (prefix: string) => Schema.isPattern(new RegExp(`^${prefix}_[${ALPHABET}]{${ID_BODY_LENGTH}}$`, "u"))

export const FileId = Schema.String.check(idPattern("file")).pipe(Schema.brand("FileId"))
export type FileId = typeof FileId.Type
export const ExecutionId = Schema.String.check(idPattern("exe")).pipe(Schema.brand("ExecutionId"))
export type ExecutionId = typeof ExecutionId.Type
export const EndpointId = Schema.String.check(idPattern("whe")).pipe(Schema.brand("EndpointId"))
export type EndpointId = typeof EndpointId.Type
export const DeliveryId = Schema.String.check(idPattern("whd")).pipe(Schema.brand("DeliveryId"))
export type DeliveryId = typeof DeliveryId.Type
export const ConnectionId = Schema.String.check(idPattern("conn")).pipe(Schema.brand("ConnectionId"))
export type ConnectionId = typeof ConnectionId.Type
export const SubscriptionId = Schema.String.check(idPattern("trgsub")).pipe(Schema.brand("SubscriptionId"))
export type SubscriptionId = typeof SubscriptionId.Type
export const KeyId = Schema.String.check(idPattern("key")).pipe(Schema.brand("KeyId"))
export type KeyId = typeof KeyId.Type

/** Project and user ids are chosen by operators: `[A-Za-z0-9_.-]{1,64}`. */
export const CHOSEN_ID = /^[A-Za-z0-9_.-]{1,64}$/u
/** A user id as the API takes it: checked, not branded. */
export const UserIdText = Schema.String.check(Schema.isPattern(CHOSEN_ID))
export const ProjectId = Schema.String.check(Schema.isPattern(CHOSEN_ID)).pipe(Schema.brand("ProjectId"))
export type ProjectId = typeof ProjectId.Type
export const UserId = UserIdText.pipe(Schema.brand("UserId"))
export type UserId = typeof UserId.Type

export type IdPrefix = "file" | "exe" | "whe" | "whd" | "conn" | "trgsub" | "trgsec" | "key" | "req" | "evt" | "evt_trigger" | "trgevt" | "whsec" | "run" | "tsk"

const ALPHABET_CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0))
const UNDERSCORE = 95
/** Characters are gathered here (synchronously, so one buffer serves every call). */
const scratch = new Uint16Array(64)

/**
 * Pure: the id body for a creation time and the `ID_RANDOM_BYTES` random bytes at `randomOffset`
 * of `random`, after `prefix` and `_` when a prefix is given. The characters are gathered first
 * and made into one flat string: built by `+=`, an id was a chain of 30 or so rope nodes that
 * every stored id kept alive.
 */
export const encodeIdBody = (timeMs: number, random: Uint8Array, prefix = "", randomOffset = 0): string => {
  const head = prefix.length === 0 ? 0 : prefix.length + 1
  const length = head + ID_BODY_LENGTH
  const codes = scratch
  for (let i = 0; i < prefix.length; i++) codes[i] = prefix.charCodeAt(i)
  if (head > 0) codes[head - 1] = UNDERSCORE
  let time = Math.max(0, Math.floor(timeMs))
  for (let i = 9; i >= 0; i--) {
    codes[head + i] = ALPHABET_CODES[time % 32]!
    time = Math.floor(time / 32)
  }
  // 112 random bits as 22 base32 characters (110 bits used).
  let at = head + 10
  let acc = 0
  let bits = 0
  for (let i = randomOffset; i < random.length && at < length; i++) {
    acc = (acc << 8) | random[i]!
    bits += 8
    while (bits >= 5 && at < length) {
      bits -= 5
      codes[at++] = ALPHABET_CODES[(acc >>> bits) & 31]!
    }
    acc &= (1 << bits) - 1
  }
  // Applied, not spread: spreading a typed array walks its iterator, five times slower.
  return Reflect.apply(String.fromCharCode, null, codes.subarray(0, length))
}

/** The creation time encoded in an id body (its first 10 characters). */
export const idTimeMs = (id: string): number => {
  const body = id.slice(id.lastIndexOf("_") + 1)
  let time = 0
  for (let i = 0; i < 10; i++) time = time * 32 + ALPHABET.indexOf(body[i] ?? "0")
  return time
}
