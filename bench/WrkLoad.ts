/**
 * The benchmarks' HTTP load under `wrk` (bench/Wrk.ts runs it), in the shape the Node load
 * generator answers (load.ts `LoadResult`), so a scenario does not care which one ran. The Lua
 * script sets the method, headers and body, and may rotate the Authorization header per request
 * (sync executions spread over projects, under demo's concurrency cap of 4 per project).
 *
 * Without wrk installed, `npm run bench` says how to install it and falls back, loudly, to the
 * Node load generator, whose figures are not comparable with wrk's.
 */
import type { LoadResult } from "./load.ts"
import { runWrk, wrkAvailable } from "./Wrk.ts"

export const hasWrk: boolean = await wrkAvailable()

let warned = false

/** Says once, on stderr, that the figures come from the fallback generator. */
export const warnFallback = (): void => {
  if (hasWrk || warned) return
  warned = true
  process.stderr.write(
    "\n*** wrk is not installed: install it (Debian/Ubuntu: `apt-get install -y wrk`; macOS: `brew install wrk`).\n" +
      "*** FALLING BACK to the Node load generator (bench/load.ts): its figures are NOT comparable with wrk's.\n\n"
  )
}

export interface WrkSpec {
  readonly url: string
  readonly method?: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array
  /** Authorization header values used in turn, one per request. */
  readonly authorizations?: ReadonlyArray<string>
  readonly connections: number
  readonly seconds: number
  readonly warmupSeconds: number
}

const quote = (text: string) => JSON.stringify(text)

const script = (spec: WrkSpec): string => {
  const body = spec.body === undefined ? undefined : typeof spec.body === "string" ? spec.body : Buffer.from(spec.body).toString("latin1")
  const keys = spec.authorizations ?? []
  return `
wrk.method = ${quote(spec.method ?? "GET")}
${body === undefined ? "" : `wrk.body = ${quote(body)}`}
${Object.entries(spec.headers ?? {}).map(([name, value]) => `wrk.headers[${quote(name)}] = ${quote(value)}`).join("\n")}
${keys.length === 0 ? "" : `
local keys = { ${keys.map(quote).join(", ")} }
local n = 0
request = function()
  n = n + 1
  wrk.headers["authorization"] = keys[(n % #keys) + 1]
  return wrk.format()
end`}
`
}

/** A warm-up run, then the measured one; non-2xx answers and socket errors count as failures. */
export const measureWrk = async (spec: WrkSpec): Promise<LoadResult> => {
  const lua = script(spec)
  if (spec.warmupSeconds > 0) await runWrk(spec.url, lua, { seconds: spec.warmupSeconds, connections: spec.connections })
  const result = await runWrk(spec.url, lua, { seconds: spec.seconds, connections: spec.connections })
  const failureKinds: Record<string, number> = {}
  if (result.non2xx > 0) failureKinds["non-2xx"] = result.non2xx
  if (result.errors > 0) failureKinds.socket = result.errors
  const failures = result.non2xx + result.errors
  const ok = Math.max(0, result.requestsPerSecond - failures / spec.seconds)
  const size = spec.body === undefined ? 0 : typeof spec.body === "string" ? Buffer.byteLength(spec.body) : spec.body.byteLength
  return {
    requests: Math.round(ok * spec.seconds),
    failures,
    failureKinds,
    requestsPerSecond: ok,
    bytesPerSecond: ok * size,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms
  }
}
