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
 * The weight `accept` gives `type` (`application/json`): that of its most specific range (the
 * type itself, then `application/*`, then `*\/*`; RFC 9110, 12.5.1), 0 when none names it.
 */
const weightOf = (accept: string, type: string): number => {
  const wildcard = `${type.slice(0, type.indexOf("/"))}/*`
  let best: { readonly rank: number; readonly q: number } | undefined
  for (const range of accept.split(",")) {
    const [media, ...params] = range.split(";")
    const name = media?.trim().toLowerCase()
    const rank = name === type ? 3 : name === wildcard ? 2 : name === "*/*" ? 1 : 0
    if (rank === 0 || (best !== undefined && best.rank >= rank)) continue
    const weight = params.map((param) => param.split("=")).find(([key]) => key?.trim().toLowerCase() === "q")
    best = { rank, q: weight === undefined ? 1 : Number(weight[1]?.trim()) }
  }
  return best === undefined || Number.isNaN(best.q) ? 0 : best.q
}

/**
 * Whether a POST may be answered at all: with JSON or an event stream, by the weights `Accept`
 * gives them. No `Accept` takes anything (RFC 9110, 12.5.1).
 */
export const acceptsAnAnswer = (accept: string | null | undefined): boolean =>
  accept === null || accept === undefined || accept.trim() === "" || weightOf(accept, "application/json") > 0 || acceptsEventStream(accept)
