/**
 * What a request's body headers must say, shared by the API and the MCP gateway (both answer
 * 415 otherwise). Pure: header text in, verdict out.
 */

/** The labels of UTF-8 in the WHATWG Encoding standard. */
const UTF8_LABELS: ReadonlySet<string> = new Set(["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"])

/**
 * Whether a body is `application/json` in UTF-8: a `+json` type, or a charset other than UTF-8
 * (JSON text is UTF-8, RFC 8259 section 8.1), would be read as something it is not.
 */
export const isJsonUtf8 = (header: string | null | undefined): boolean => {
  if (header === undefined || header === null) return false
  const [type, ...parameters] = header.split(";")
  if ((type ?? "").trim().toLowerCase() !== "application/json") return false
  return parameters.every((parameter) => {
    const [name, value] = parameter.split("=", 2).map((part) => part.trim().toLowerCase())
    return name !== "charset" || UTF8_LABELS.has(value?.replace(/^"(.*)"$/, "$1") ?? "")
  })
}

/** A body sent with a content coding (gzip, br): the API and the gateway read bodies as sent, not decoded. */
const isEncoded = (header: string | null | undefined): boolean =>
  header !== undefined && header !== null && header.split(",").some((coding) => coding.trim().toLowerCase() !== "identity")

/**
 * A body sent with a transfer coding besides `chunked` (`gzip, chunked`): Node's parser undoes only
 * the chunking, so the rest would be read as if it were plain (RFC 9112 section 6.1: a coding the
 * server does not understand is refused).
 */
const isTransferCoded = (header: string | null | undefined): boolean =>
  header !== undefined && header !== null && header.split(",").some((coding) => coding.trim().toLowerCase() !== "chunked")

type Header = string | null | undefined

/**
 * Why a body's headers are refused (the 415's message), or undefined when they say JSON in UTF-8,
 * sent as it is: `notJson` is the caller's own wording of the first refusal.
 */
export const bodyHeadersRefusal = (
  headers: { readonly contentType: Header; readonly contentEncoding: Header; readonly transferEncoding: Header },
  notJson: string
): string | undefined => {
  if (!isJsonUtf8(headers.contentType)) return notJson
  if (isEncoded(headers.contentEncoding)) return "The request body must not be content-encoded."
  if (isTransferCoded(headers.transferEncoding)) return "The request body must not have a transfer coding other than chunked."
  return undefined
}
