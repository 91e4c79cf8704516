import { readFileSync } from "node:fs"
import { dirname, relative, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..")

/** Every project file reachable from `entry` through relative imports, as root-relative paths. */
const reachable = (entry: string): ReadonlyArray<string> => {
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    const source = readFileSync(file, "utf8")
    for (const match of source.matchAll(/(?:import|export)[^"']*?from\s+["'](\.[^"']+)["']/g)) {
      const target = match[1]
      if (target !== undefined) visit(resolve(dirname(file), target))
    }
  }
  visit(resolve(ROOT, entry))
  return [...seen].map((file) => relative(ROOT, file)).toSorted()
}

describe("the client library's imports", () => {
  it("reach only the client, the domain and the HTTP contracts", () => {
    const files = reachable("client/index.ts")
    expect(files).toContain("http/ConnectionsApi.ts")
    expect(files).toContain("http/ExecutionsApi.ts")
    // Contracts may import the middleware declarations they annotate, never implementations.
    const contract = /^(client\/[A-Za-z]+\.ts|domain\/.+\.ts|http\/[A-Za-z]+Api\.ts|http\/(Middleware|Caller|Query)\.ts)$/
    expect(files.filter((file) => !contract.test(file))).toEqual([])
  })
})
