/**
 * The preflight (src/Preflight.ts) reads every variable docs/configuration.md lists before
 * anything starts, so that a typo is one line naming it, before a database or a port is touched
 * (decisions.md section 9). The list comes from the document itself: a variable added to it
 * without a check fails here.
 */
import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { preflight } from "../../src/Preflight.ts"
import { configLayer } from "../support/Config.ts"

/** Variables the document says are not checked, or that only tests and benchmarks read. */
const UNCHECKED = new Set(["SERVICE_HOST", "OTEL_SERVICE_NAME", "SERVICE_TEST_DATABASE_URL", "FUZZ_RUNS", "FUZZ_SEED", "SERVICE_BENCH_DATABASE_URL"])

const documented = (): ReadonlyArray<string> => {
  const text = readFileSync(new URL("../../docs/configuration.md", import.meta.url), "utf8")
  const names = [...text.matchAll(/^\| *([A-Z][A-Z0-9_]{3,}(?:, *[A-Z][A-Z0-9_]{3,})*) *\|/gm)].flatMap((match) => match[1]!.split(/, */))
  return [...new Set(names)].filter((name) => !UNCHECKED.has(name))
}

const refusal = (env: Record<string, string>) =>
  Effect.runPromise(Effect.flip(preflight).pipe(Effect.provide(configLayer(env)), Effect.map((error) => error.message), Effect.orElseSucceed(() => "(accepted)")))

describe("the preflight", () => {
  const names = documented()
  it("finds the documented variables", () => {
    expect(names.length).toBeGreaterThan(40)
    expect(names).toContain("SERVICE_FEED_HELD_WARN_SECONDS")
  })

  it.each(names)("refuses a value of %s that no variable takes, naming it", async (name) => {
    // With a database URL where one matters: SERVICE_SECRET_KEY is required only with one.
    const message = await refusal({ [name]: "x y" })
    expect(message).toMatch(new RegExp(`^${name}: `))
  })

  it("refuses OTLP headers that are not key=value, and a bad OTEL_SDK_DISABLED with no endpoint set", async () => {
    expect(await refusal({ OTEL_EXPORTER_OTLP_HEADERS: "api-key=1,broken" })).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS: /)
    expect(await refusal({ OTEL_SDK_DISABLED: "maybe" })).toMatch(/^OTEL_SDK_DISABLED: /)
  })

  it("takes a well-formed configuration", async () => {
    expect(await refusal({ SERVICE_FEED_HELD_WARN_SECONDS: "45", OTEL_EXPORTER_OTLP_HEADERS: "api-key=1, x-tenant=a%20b", OTEL_SDK_DISABLED: "true" })).toBe("(accepted)")
  })
})
