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
    expect(files).toContain("http/api/ConnectionsApi.ts")
    expect(files).toContain("http/api/ExecutionsApi.ts")
    // `http/api/` is the contract: what the client may import; the server lives in `http/server/`.
    const contract = /^(client\/[A-Za-z]+\.ts|domain\/.+\.ts|http\/api\/[A-Za-z]+\.ts)$/
    expect(files.filter((file) => !contract.test(file))).toEqual([])
  })
})
