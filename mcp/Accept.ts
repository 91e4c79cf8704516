/**
 * Whether a request's `Accept` asks for an event stream: it names `text/event-stream` (in any
 * case) with a weight above zero. `q=0` means "not acceptable" (RFC 9110, 12.4.2), so
 * `text/event-stream;q=0` is a refusal, not a request. Wildcards (`*\/*`, `text/*`) do not
 * count: MCP's transport has the client name the stream type when it wants one.
 */
export const acceptsEventStream = (accept: string | null | undefined): boolean => {
  if (accept === null || accept === undefined) return false
  for (const range of accept.split(",")) {
    const [media, ...params] = range.split(";")
    if (media?.trim().toLowerCase() !== "text/event-stream") continue
    const weight = params.map((param) => param.split("=")).find(([name]) => name?.trim().toLowerCase() === "q")
    if (weight === undefined || !(Number(weight[1]?.trim()) === 0)) return true
  }
  return false
}
