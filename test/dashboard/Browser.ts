/**
 * What the dashboard's end-to-end tests add to the Chromium launcher (dashboard/scripts/
 * chromium.ts): an axe-core scan that reports serious or critical violations, screenshots under
 * test-output/dashboard/, and a record of what the page logged and requested (to prove the key
 * never leaks there).
 */
import { mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import type { Locator, Page, Route } from "playwright-core"
import { expect } from "vitest"
import { KEY } from "../support/Service.ts"

export { type Browser, launch } from "../../dashboard/scripts/chromium.ts"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
export const SCREENSHOTS = join(ROOT, "test-output/dashboard")

export interface Watched {
  readonly console: Array<string>
  readonly requests: Array<string>
  readonly errors: Array<string>
}

/** Everything the page logs, requests and throws, kept for assertions. */
export const watch = (page: Page): Watched => {
  const watched: Watched = { console: [], requests: [], errors: [] }
  page.on("console", (message) => watched.console.push(`${message.type()}: ${message.text()}`))
  page.on("request", (request) => watched.requests.push(request.url()))
  page.on("pageerror", (error) => watched.errors.push(error.message))
  return watched
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

export interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly help: string
  readonly targets: ReadonlyArray<string>
}

/**
 * axe-core's violations of serious or critical impact on the page as it is now. The script is
 * evaluated through the DevTools protocol, which the page's CSP (script-src 'self') does not
 * govern, so the page is scanned under its real policy.
 */
export const seriousViolations = async (page: Page): Promise<ReadonlyArray<Violation>> => {
  await page.evaluate(axeSource)
  const violations = await page.evaluate<ReadonlyArray<Violation>>(`
    axe.run(document, { resultTypes: ["violations"] }).then((result) =>
      result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(" ")) })))
  `)
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical")
}

export const screenshot = async (page: Page, name: string): Promise<void> => {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

/** Opens `address` (a dashboard URL), signs in with `key`, and waits for the views' navigation. */
export const signIn = async (page: Page, address: string, key = KEY): Promise<void> => {
  await page.goto(address)
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("navigation", { name: "Views" }).waitFor()
}

/** Waits until no list of the page is loading. */
export const settled = (page: Page) =>
  expect.poll(() => page.evaluate(`document.querySelector("[aria-busy=true], .loading") === null`), { timeout: 10_000 }).toBe(true)

/**
 * Fills the subscription form for a polling subscription (github.issue_opened on octo/hello) and
 * creates it; waits for the page to say it was made (a polling one has no ingest URL to show).
 */
export const createPollingSubscription = async (page: Page, input: { readonly userId: string; readonly connectionId: string; readonly endpointId: string }) => {
  await page.getByLabel("Trigger", { exact: true }).selectOption("github.issue_opened")
  await page.getByLabel("User id").fill(input.userId)
  await page.getByLabel(/^Connection/).fill(input.connectionId)
  await page.getByLabel("owner (required)").fill("octo")
  await page.getByLabel("repo (required)").fill("hello")
  await page.getByLabel("Other webhook endpoint ids (optional)").fill(input.endpointId)
  await page.getByRole("button", { name: "Create subscription" }).click()
  await page.getByText(/^Subscription trgsub_\S+ created \(polling every 60 s\)\.$/).waitFor()
}

/**
 * Fills the subscription form for a push subscription (demo.event, no filters) sent to
 * `endpointId` and presses Create; what follows (an ingest URL, or a dialog first) is the caller's.
 */
export const submitPushSubscription = async (page: Page, input: { readonly userId: string; readonly endpointId: string }) => {
  await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
  await page.getByLabel("User id").fill(input.userId)
  await page.getByLabel("Other webhook endpoint ids (optional)").fill(input.endpointId)
  await page.getByRole("button", { name: "Create subscription" }).click()
}

/** The subscription id inside an ingest URL (`/v1/ingest/<id>/<secret>`); empty when there is none. */
export const subscriptionIdOf = (ingestUrl: string): string => /\/v1\/ingest\/(trgsub_[^/]+)\//.exec(ingestUrl)?.[1] ?? ""

/** What has the focus: the element's tag and its id, or its text when it has none; `body` when nothing on the page has it. */
export const focused = (page: Page) =>
  page.evaluate(
    `(() => { const e = document.activeElement; return e === null || e === document.body ? "body" : e.tagName + ":" + (e.id !== "" ? "#" + e.id : (e.textContent ?? "").trim()) })()`
  ) as Promise<string>

/** A route handler answering the service's error envelope, as the service would (playwright's routing). */
export const envelope = (status: number, code: string, message: string, retryable: boolean) => (route: Route) =>
  route.fulfill({
    status,
    contentType: "application/json",
    headers: { "request-id": "req_00000000000000000000000000000000" },
    body: JSON.stringify({ error: { code, message, retryable }, requestId: "req_00000000000000000000000000000000" })
  })

/** The service's 429 with a Retry-After of `seconds`, as its rate limit answers. */
export const rateLimited = (seconds: number) => (route: Route) =>
  route.fulfill({
    status: 429,
    contentType: "application/json",
    headers: { "retry-after": String(seconds), "request-id": "req_00000000000000000000000000000000" },
    body: JSON.stringify({
      error: { code: "rate_limited", message: "Too many requests.", retryable: true, retryAfter: seconds },
      requestId: "req_00000000000000000000000000000000"
    })
  })

/** How many lines `cell`'s text takes: the distinct tops of its line boxes' fragments. */
export const linesOf = (cell: Locator) =>
  cell.evaluate((element) => {
    // The page's own document (this runs in the browser; the tests' types have no DOM).
    const range = element.ownerDocument.createRange()
    range.selectNodeContents(element)
    const tops: Array<number> = []
    for (const rect of Array.from(range.getClientRects()) as Array<{ readonly width: number; readonly top: number }>) {
      if (rect.width > 0 && !tops.some((top) => Math.abs(top - rect.top) < 6)) tops.push(rect.top)
    }
    return tops.length
  })
