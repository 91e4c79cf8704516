/**
 * The webhook endpoint views in headless Chromium against the real service: the event picker
 * shows the catalog's descriptions with their `code` spans as code, not as backticks.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { seriousViolations, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = (page: Page, path: string, key = KEY) => signInAt(page, url(path), key)

/** The picker's label of `event` (its name is a code element). */
const labelOf = (page: Page, event: string) =>
  page.locator("label").filter({ has: page.locator("code", { hasText: new RegExp(`^${event.replaceAll(".", "\\.")}$`) }) })

describe("the event picker", () => {
  it("shows the catalog's `code` spans as code elements, without backticks, on the list and on an endpoint's page", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/picker", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    for (const path of ["/dashboard/webhooks", `/dashboard/webhooks/${endpoint.endpointId}`]) {
      await page.goto(url(path))
      const demo = labelOf(page, "trigger.demo.event")
      await demo.first().waitFor()
      for (const [event, code] of [["trigger.demo.event", "event"], ["trigger.slack.message_posted", "message"]] as const) {
        const label = labelOf(page, event)
        expect(await label.count()).toBe(1)
        expect(await label.textContent()).not.toContain("`")
        expect(await label.locator("code").allTextContents()).toEqual([event, code])
      }
      expect(await page.locator("fieldset.events").textContent()).not.toContain("`")
      expect(await seriousViolations(page)).toEqual([])
    }
    await page.close()
  })
})
