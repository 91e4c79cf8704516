/**
 * The subscriptions view in headless Chromium against the real service: the catalog's
 * descriptions (the trigger's hint, a filter's hint) show their `code` spans as code elements.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { seriousViolations, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { url } = h

const signIn = (page: Page, path: string, key = KEY) => signInAt(page, url(path), key)

/** The element that describes `field` (its aria-describedby). */
const hintOf = async (page: Page, field: ReturnType<Page["getByLabel"]>) =>
  page.locator(`[id="${(await field.getAttribute("aria-describedby")) ?? ""}"]`)

describe("the subscription form", () => {
  it("shows the catalog's `code` spans as code elements in the trigger's hint and the filters' hints", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    const trigger = await hintOf(page, page.getByLabel("Trigger", { exact: true }))
    await expect.poll(() => trigger.textContent()).toBe("Any event pushed to the subscription's ingest URL; the payload is the callback's event object.")
    expect(await trigger.locator("code").allTextContents()).toEqual(["event"])
    const filter = await hintOf(page, page.getByLabel("type (optional)"))
    expect(await filter.textContent()).toBe("Only events whose type equals this value.")
    expect(await filter.locator("code").allTextContents()).toEqual(["type"])
    await page.getByLabel("Trigger", { exact: true }).selectOption("slack.message_posted")
    await expect.poll(() => trigger.locator("code").allTextContents()).toEqual(["message"])
    expect(await trigger.textContent()).not.toContain("`")
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })
})
