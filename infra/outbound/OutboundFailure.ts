/**
 * Turns whatever Node, undici or OpenSSL threw into one sanitized reason. Only error codes are
 * read (never messages), through the `cause` chain and the per-address errors of an
 * AggregateError (Happy Eyeballs), so the reason is stable across Node and undici versions.
 */
import { Predicate } from "effect"

export type FailureReason =
  | "timeout"
  | "connection_refused"
  | "dns_failure"
  | "tls_error"
  | "address_blocked"
  | "connection_reset"
  | "network_error"
  | "invalid_request"

export const failureMessages: Record<FailureReason, string> = {
  timeout: "The request timed out",
  connection_refused: "The connection was refused",
  dns_failure: "The host name could not be resolved",
  tls_error: "The TLS handshake failed or the certificate was not trusted",
  address_blocked: "The destination address is not allowed",
  connection_reset: "The connection was closed before a complete response",
  network_error: "The request failed on the network",
  invalid_request: "The request could not be sent as given"
}

const collectCodes = (error: unknown, into: Array<string>, depth = 0): Array<string> => {
  if (depth > 5 || !Predicate.isObject(error)) return into
  if (Predicate.hasProperty(error, "code") && Predicate.isString(error.code)) into.push(error.code)
  if (Predicate.hasProperty(error, "errors") && Array.isArray(error.errors)) {
    for (const inner of error.errors) collectCodes(inner, into, depth + 1)
  }
  if (Predicate.hasProperty(error, "cause")) collectCodes(error.cause, into, depth + 1)
  return into
}

const TIMEOUT = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "ABORT_ERR"])
const DNS = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "EAI_NODATA", "EAI_NONAME", "ENODATA", "ESERVFAIL", "ECANCELLED", "ETIMEOUT", "EREFUSED", "EBADRESP"])
const RESET = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET", "ECONNABORTED", "UND_ERR_RES_CONTENT_LENGTH_MISMATCH"])
const INVALID = new Set(["UND_ERR_INVALID_ARG", "ERR_INVALID_URL", "ERR_INVALID_HTTP_TOKEN", "ERR_INVALID_CHAR", "ERR_INVALID_ARG_TYPE"])

const isTls = (code: string): boolean =>
  code.startsWith("ERR_TLS_") ||
  code.startsWith("ERR_SSL_") ||
  code.startsWith("ERR_OSSL_") ||
  code.startsWith("CERT_") ||
  code.startsWith("UNABLE_TO_") ||
  code.includes("SELF_SIGNED") ||
  code === "HOSTNAME_MISMATCH" ||
  code === "EPROTO"

/** Earlier rules win: a blocked address is reported as such even if a reset followed. */
export const classifyFailure = (error: unknown): FailureReason => {
  const codes = collectCodes(error, [])
  if (codes.includes("ERR_ADDRESS_BLOCKED")) return "address_blocked"
  if (codes.some((code) => DNS.has(code))) return "dns_failure"
  if (codes.includes("ECONNREFUSED")) return "connection_refused"
  if (codes.some(isTls)) return "tls_error"
  if (codes.some((code) => TIMEOUT.has(code))) return "timeout"
  if (codes.some((code) => RESET.has(code))) return "connection_reset"
  if (codes.some((code) => INVALID.has(code))) return "invalid_request"
  return "network_error"
}
