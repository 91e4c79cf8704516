/** `GET /v1/me` (authentication and the rate limit, nothing else) next to a raw node:http server. */
import { row, type Scenario } from "../Scenario.ts"

export const me: Scenario = {
  name: "GET /v1/me",
  run: async (context) => {
    const raw = await context.load({ url: `${context.rawBaseUrl}/v1/me` })
    const rows = [row("GET /v1/me", "raw node:http", raw, "baseline")]
    for (const target of context.targets) {
      const result = await context.load({ url: `${target.baseUrl}/v1/me`, headers: { authorization: `Bearer ${target.key}` } })
      const ratio = raw.requestsPerSecond === 0 ? 0 : result.requestsPerSecond / raw.requestsPerSecond
      rows.push(row("GET /v1/me", target.name, result, `${(ratio * 100).toFixed(0)}% of raw req/s`))
    }
    return rows
  }
}
