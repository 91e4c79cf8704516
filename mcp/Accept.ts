/**
 * What a `/mcp` request's `Accept` allows. A media range weighted `q=0` is "not acceptable"
 * (RFC 9110, 12.4.2), so `text/event-stream;q=0` is a refusal, not a request.
 */
/** The media ranges of an `Accept` with a weight above zero, lower-cased. */
const acceptedRanges = (accept: string): ReadonlyArray<string> =>
  accept.split(",").flatMap((range) => {
    const [media, ...params] = range.split(";")
    const weight = params.map((param) => param.split("=")).find(([name]) => name?.trim().toLowerCase() === "q")
    return weight !== undefined && Number(weight[1]?.trim()) === 0 ? [] : [media?.trim().toLowerCase() ?? ""]
  })

/**
 * Whether the client asks for an event stream: it names `text/event-stream` (in any case) with a
 * weight above zero. Wildcards (`*\/*`, `text/*`) do not count: MCP's transport has the client
 * name the stream type when it wants one.
 */
export const acceptsEventStream = (accept: string | null | undefined): boolean =>
  accept !== null && accept !== undefined && acceptedRanges(accept).includes("text/event-stream")

/**
 * Whether a POST may be answered at all: with JSON (`application/json`, `application/*`, `*\/*`)
 * or an event stream. No `Accept` takes anything (RFC 9110, 12.5.1).
 */
export const acceptsAnAnswer = (accept: string | null | undefined): boolean =>
  accept === null || accept === undefined ||
  acceptedRanges(accept).some((media) => media === "application/json" || media === "application/*" || media === "*/*" || media === "text/event-stream")
