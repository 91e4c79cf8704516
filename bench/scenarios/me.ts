/**
 * `GET /v1/me` (authentication and the rate limit, nothing else) next to a raw node:http server
 * and to the same answer through Effect's HTTP server alone and through a bare Effect HttpApi
 * (bench/effect-floors.ts): the framework's floors, the ceilings of the service's ratio.
 */
import { startEffectFloor } from "../Processes.ts"
import { row, type Scenario } from "../Scenario.ts"

export const me: Scenario = {
  name: "GET /v1/me",
  run: async (context) => {
    const raw = await context.load({ url: `${context.rawBaseUrl}/v1/me` })
    const rows = [row("GET /v1/me", "raw node:http", raw, "baseline")]
    const ofRaw = (requestsPerSecond: number) =>
      `${((raw.requestsPerSecond === 0 ? 0 : requestsPerSecond / raw.requestsPerSecond) * 100).toFixed(0)}% of raw req/s`
    for (const [mode, name] of [["router", "Effect HttpRouter, no service"], ["httpapi", "Effect HttpApi, no service"]] as const) {
      const floor = await startEffectFloor(mode)
      try {
        const result = await context.load({ url: `${floor.baseUrl}/v1/me` })
        rows.push(row("GET /v1/me", name, result, ofRaw(result.requestsPerSecond)))
      } finally {
        await floor.stop()
      }
    }
    for (const target of context.targets) {
      const result = await context.load({ url: `${target.baseUrl}/v1/me`, headers: { authorization: `Bearer ${target.key}` } })
      rows.push(row("GET /v1/me", target.name, result, ofRaw(result.requestsPerSecond)))
    }
    return rows
  }
}
