/**
 * Load from `wrk` (Debian package), not from Node: a Node load generator tops out below what
 * raw `node:http` serves, so ratios measured with it flatter the service. One thread, so one Lua
 * state numbers every request of a run (MCP JSON-RPC ids must be distinct: a repeated id is an
 * idempotent replay).
 */
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface WrkResult {
  /** Requests answered in the run (wrk's "N requests in"). */
  readonly requests: number
  readonly requestsPerSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly non2xx: number
  readonly errors: number
}

export const wrkAvailable = (): Promise<boolean> =>
  new Promise((resolve) => execFile("wrk", ["--version"], (error) => resolve(error === null || (error as { code?: unknown }).code !== "ENOENT")))

const ms = (value: string, unit: string) => Number(value) * (unit === "us" ? 0.001 : unit === "s" ? 1000 : 1)

/** Runs wrk with `script` (Lua) against `url`; parses its summary and `--latency` percentiles. */
export const runWrk = (url: string, script: string, options: { readonly seconds: number; readonly connections: number }): Promise<WrkResult> => {
  const dir = mkdtempSync(join(tmpdir(), "wrk-"))
  const file = join(dir, "script.lua")
  writeFileSync(file, script)
  return new Promise((resolve, reject) =>
    execFile("wrk", ["-t1", `-c${options.connections}`, `-d${options.seconds}s`, "--latency", "-s", file, url], { maxBuffer: 1 << 20 }, (error, stdout) => {
      if (error !== null) return reject(error)
      const requests = /(\d+) requests in/.exec(stdout)
      const rate = /Requests\/sec:\s+([\d.]+)/.exec(stdout)
      const p50 = /\s50%\s+([\d.]+)(us|ms|s)/.exec(stdout)
      const p99 = /\s99%\s+([\d.]+)(us|ms|s)/.exec(stdout)
      const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)
      const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)
      if (requests === null || rate === null || p50 === null || p99 === null) return reject(new Error(`unexpected wrk output:\n${stdout}`))
      resolve({
        requests: Number(requests[1]),
        requestsPerSecond: Number(rate[1]),
        p50Ms: ms(p50[1]!, p50[2]!),
        p99Ms: ms(p99[1]!, p99[2]!),
        non2xx: non2xx === null ? 0 : Number(non2xx[1]),
        errors: errors === null ? 0 : errors.slice(1).reduce((sum, n) => sum + Number(n), 0)
      })
    }))
}

/** A Lua script sending `method path` with these headers and a body per request (`%d` is its number). */
export const luaScript = (options: { readonly method: string; readonly path: string; readonly headers: Readonly<Record<string, string>>; readonly body: string }) => `
local n = 0
wrk.method = "${options.method}"
${Object.entries(options.headers).map(([name, value]) => `wrk.headers["${name}"] = "${value.replace(/"/g, '\\"')}"`).join("\n")}
request = function()
  n = n + 1
  local body = string.format([[${options.body}]], n)
  return wrk.format(nil, "${options.path}", nil, body)
end
`
