/**
 * `.env.example` says it lists every variable the service reads, and README says so too: each
 * variable documented in docs/configuration.md's tables is in it (outside audit: the ingest
 * budget's two were added to the page, not to the file).
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8")

describe(".env.example", () => {
  it("has every variable docs/configuration.md documents", () => {
    const documented = [...read("docs/configuration.md").matchAll(/^\| (SERVICE_[A-Z0-9_]+|OTEL_[A-Z0-9_]+) \|/gmu)].map((match) => match[1])
    expect(documented.length).toBeGreaterThan(40)
    const listed = new Set([...read(".env.example").matchAll(/^#? ?([A-Z][A-Z0-9_]+)=/gmu)].map((match) => match[1]))
    expect(documented.filter((name) => !listed.has(name))).toEqual([])
  })
})
