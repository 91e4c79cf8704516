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

/** The packages a file loads at run time: non-relative specifiers of imports that are not `import type`. */
const runtimePackages = (file: string): ReadonlyArray<string> =>
  [...readFileSync(resolve(ROOT, file), "utf8").matchAll(/^(?:import|export)\s+(?!type\s)[^"']*?from\s+["']([^."'][^"']*)["']/gm)]
    .flatMap((match) => (match[1] === undefined ? [] : [match[1]]))

describe("the client library's imports", () => {
  it("reach only the client, the domain and the HTTP contracts", () => {
    const files = reachable("client/index.ts")
    expect(files).toContain("http/api/ConnectionsApi.ts")
    expect(files).toContain("http/api/ExecutionsApi.ts")
    expect(files).toContain("http/api/WebhooksApi.ts")
    expect(files).toContain("http/api/SubscriptionsApi.ts")
    // `http/api/` is the contract: what the client may import; the server lives in `http/server/`.
    const contract = /^(client\/[A-Za-z]+\.ts|domain\/.+\.ts|http\/api\/[A-Za-z]+\.ts)$/
    expect(files.filter((file) => !contract.test(file))).toEqual([])
  })

  it("load no package but effect, so that browsers can bundle the client (no node: built-ins)", () => {
    const packages = new Set(reachable("client/index.ts").flatMap(runtimePackages))
    expect([...packages].filter((name) => name !== "effect" && !name.startsWith("effect/"))).toEqual([])
  })
})
