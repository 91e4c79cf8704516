/**
 * What a `/mcp` request's `Accept` allows. A media range weighted `q=0` is "not acceptable"
 * (RFC 9110, 12.4.2), so `text/event-stream;q=0` is a refusal, not a request; a weight that is
 * not a number counts as 1.
 */

/** The media ranges of an `Accept`, lower-cased, each with its weight. */
const ranges = (accept: string): ReadonlyArray<{ readonly media: string; readonly q: number }> =>
  accept.split(",").map((range) => {
    const [media, ...params] = range.split(";")
    const weight = params.map((param) => param.split("=")).find(([name]) => name?.trim().toLowerCase() === "q")
    const q = weight === undefined ? 1 : Number(weight[1]?.trim())
    return { media: media?.trim().toLowerCase() ?? "", q: Number.isNaN(q) ? 1 : q }
  })

/**
 * Whether the client asks for an event stream: it names `text/event-stream` (in any case) with a
 * weight above zero. Wildcards (`*\/*`, `text/*`) do not count: MCP's transport has the client
 * name the stream type when it wants one.
 */
export const acceptsEventStream = (accept: string | null | undefined): boolean =>
  accept !== null && accept !== undefined && ranges(accept).some((range) => range.media === "text/event-stream" && range.q > 0)

/** The rank of the range that names JSON most specifically (RFC 9110, 12.5.1); 0 when none does. */
const jsonRank = (media: string): number => (media === "application/json" ? 3 : media === "application/*" ? 2 : media === "*/*" ? 1 : 0)

/**
 * Whether a POST may be answered at all: with JSON (by the weight of the range that names it most
 * specifically, so `application/json;q=0, *\/*` refuses it) or with an event stream. No `Accept`
 * takes anything.
 */
export const acceptsAnAnswer = (accept: string | null | undefined): boolean => {
  if (accept === null || accept === undefined || accept.trim() === "") return true
  const json = ranges(accept).filter((range) => jsonRank(range.media) > 0).toSorted((a, b) => jsonRank(b.media) - jsonRank(a.media))[0]
  return (json !== undefined && json.q > 0) || acceptsEventStream(accept)
}
