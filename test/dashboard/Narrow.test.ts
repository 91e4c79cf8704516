/**
 * The dashboard on a 375 px screen, in headless Chromium against the real service: a long valid
 * id does not make the page scroll sideways, and a table that scrolls inside its own box can be
 * reached and scrolled by keyboard (axe's scrollable-region-focusable), named for what it holds.
 * At 1280 px every list's rows fit their table's box, with long ids and a 64-character user id.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { linesOf, seriousViolations, signIn as signInAt, settled } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const LONG_USER = "user_with_a_quite_long_identifier_that_is_sixty_four_chars_xxxxx"

const signIn = (page: Page, path: string) => signInAt(page, url(path))

const fits = (page: Page) => page.evaluate<boolean>(`document.documentElement.scrollWidth <= document.documentElement.clientWidth`)

/** Every list view, with the name of the region its table scrolls in. */
const LISTS = [
  ["/dashboard/trigger-events", "Trigger events, newest first"],
  ["/dashboard/executions", "Executions, newest first"],
  ["/dashboard/subscriptions", "Trigger subscriptions, newest first"],
  ["/dashboard/webhooks", "Webhook endpoints"],
  ["/dashboard/files", "Staged files, newest first"]
] as const

const showList = async (page: Page, path: string) => {
  await page.goto(url(path))
  await page.locator("table tbody tr").first().waitFor()
  await settled(page)
}

/** A demo trigger event pushed to a new subscription of `userId`, delivered to a new endpoint. */
const ingestedEvent = async (tag: string, userId: string) => {
  const endpoint = await api.webhooks.create({ url: `https://example.com/${tag}-events`, events: ["trigger.*"] })
  const pushed = await api.subscriptions.create({ trigger: "demo.event", userId, webhookEndpointIds: [endpoint.endpointId] })
  const ingested = await fetch(url(new URL(pushed.ingestUrl ?? "").pathname), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "event_callback", event_id: `Ev_${tag}_events`, event_time: Math.floor(Date.now() / 1000), event: { type: tag } })
  })
  expect(ingested.status).toBe(202)
}

describe("the dashboard at 375 px", () => {
  it("keeps an execution record with a 64-character user id inside the screen", async () => {
    expect(LONG_USER).toHaveLength(64)
    const execution = await api.executions.execute({ tool: "demo.echo", input: {}, userId: LONG_USER })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 375, height: 740 })
    await signIn(page, `/dashboard/executions/${execution.executionId}`)
    await page.getByText(LONG_USER).waitFor()
    expect(await fits(page)).toBe(true)
    await page.close()
  })

  it("lets a table that scrolls inside itself take the keyboard focus, named for what it holds", async () => {
    await ingestedEvent("narrow", "user_narrow_events")
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: LONG_USER })
    await api.files.create({ name: "narrow-events.txt", content: new TextEncoder().encode("n") })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 375, height: 740 })
    await signIn(page, "/dashboard/trigger-events")
    for (const [path, name] of LISTS) {
      await showList(page, path)
      expect(await seriousViolations(page), path).toEqual([])
      const region = page.getByRole("region", { name })
      expect(await region.getAttribute("tabindex"), path).toBe("0")
      expect(await fits(page), path).toBe(true)
    }
    await page.close()
  })
})

/** A 36-character user id: a line of its own at 375 px, or two. */
const MID_USER = "user_narrow_columns_thirty_six_chars"
/** A file name of 255 characters with no space to break at: free text, bounded, wrapping. */
const LONG_NAME = `${"a-rather-long-file-name-".repeat(11).slice(0, 247)}.txt.bin`


/** The cell of column `column` (from 0) in the row that holds `text`. */
const cellOf = (page: Page, region: string, text: string, column: number) =>
  page.getByRole("region", { name: region }).locator("tbody tr").filter({ hasText: text }).first().locator("td").nth(column)

describe("the tables at 375 px", () => {
  it("do not squeeze ids, short names and times into a few characters a line: the table scrolls in its region instead", async () => {
    expect(MID_USER).toHaveLength(36)
    expect(LONG_NAME).toHaveLength(255)
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: MID_USER })
    const endpoint = await api.webhooks.create({ url: "https://example.com/narrow-columns", events: ["trigger.*"] })
    await api.subscriptions.create({ trigger: "demo.event", userId: MID_USER, webhookEndpointIds: [endpoint.endpointId] })
    await api.files.create({ name: "file-129.bin", content: new TextEncoder().encode("129") })
    await api.files.create({ name: LONG_NAME, content: new TextEncoder().encode("long") })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 375, height: 740 })
    await signIn(page, "/dashboard/executions")

    await showList(page, `/dashboard/executions?userId=${MID_USER}`)
    const execution = "Executions, newest first"
    expect(await linesOf(cellOf(page, execution, MID_USER, 3)), "an execution's user id").toBeLessThanOrEqual(2)
    expect(await linesOf(cellOf(page, execution, MID_USER, 4)), "an execution's created time").toBeLessThanOrEqual(2)
    expect(await fits(page), "executions").toBe(true)

    await showList(page, "/dashboard/subscriptions")
    const subscriptions = "Trigger subscriptions, newest first"
    expect(await linesOf(cellOf(page, subscriptions, MID_USER, 1)), "a subscription's user id").toBeLessThanOrEqual(2)
    expect(await linesOf(cellOf(page, subscriptions, MID_USER, 4)), "a subscription's created time").toBeLessThanOrEqual(2)
    expect(await fits(page), "subscriptions").toBe(true)

    await showList(page, "/dashboard/files")
    const files = "Staged files, newest first"
    const short = cellOf(page, files, "file-129.bin", 0)
    expect(await short.textContent()).toBe("file-129.bin")
    expect(await linesOf(short), "a short file name").toBe(1)
    expect(await linesOf(cellOf(page, files, "file-129.bin", 4)), "a file's expiry").toBeLessThanOrEqual(2)
    // The longest name wraps, in a column of bounded width, rather than one character a line.
    const long = cellOf(page, files, LONG_NAME, 0)
    const longLines = await linesOf(long)
    expect(longLines, "a 255-character file name").toBeGreaterThan(1)
    expect(longLines, "a 255-character file name").toBeLessThanOrEqual(20)
    expect((await long.boundingBox())?.width ?? 0, "the long name's column").toBeLessThanOrEqual(400)
    expect(await fits(page), "files").toBe(true)
    await page.close()
  })
})

describe("the dashboard at 1280 px", () => {
  it("shows every list's rows whole, trigger events included, with long ids and a 64-character user id", async () => {
    await ingestedEvent("wide", LONG_USER)
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: LONG_USER })
    await api.files.create({ name: "a-staged-file-with-a-rather-long-name-for-the-list.txt", content: new TextEncoder().encode("w") })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 800 })
    await signIn(page, "/dashboard/executions")
    for (const [path, name] of LISTS) {
      await showList(page, path)
      const widths = await page.getByRole("region", { name }).evaluate((box) => ({ content: box.scrollWidth, shown: box.clientWidth }))
      expect(widths.content, `${path} ${JSON.stringify(widths)}`).toBeLessThanOrEqual(widths.shown)
    }
    await page.close()
  })
})
