/**
 * docs/operations.md shows real output of `migrate` and `/readyz`: the migration list and the
 * applied count there are the code's own, so a new migration cannot leave the page behind.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { migrations } from "../../src/App.ts"

const page = readFileSync(new URL("../../docs/operations.md", import.meta.url), "utf8")
const known = migrations.toSorted((a, b) => a.id - b.id).map((migration) => `${migration.id}_${migration.name}`)

describe("docs/operations.md", () => {
  it("lists every migration `migrate` applies, in order", () => {
    expect(page).toContain(`applied migrations: ${known.join(", ")}\n`)
  })

  it("counts every migration where it shows a database not migrated yet", () => {
    for (const [, total] of page.matchAll(/\(\d+ of (\d+) migrations applied\)/gu)) expect(Number(total)).toBe(known.length)
    expect(page).toMatch(/\(\d+ of \d+ migrations applied\)/u)
  })

  it("shows /readyz counting every migration", () => {
    expect(page).toContain(`"migrations":{"status":"ok","applied":${known.length}}`)
  })
})
