/**
 * The webhook endpoint views in headless Chromium against the real service: the event picker
 * shows the catalog's descriptions with their `code` spans as code, not as backticks; a button
 * that cannot act says why beside it (no event picked, nothing changed); a form's error goes once
 * its fields change.
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

/** What the button says about why it cannot act: the polite live text it is described by ("" when none). */
const whyOf = async (page: Page, name: string) => {
  const button = page.getByRole("button", { name })
  const describedBy = await button.getAttribute("aria-describedby")
  const why = page.locator(`[id="${describedBy ?? ""}"]`)
  return {
    disabled: await button.getAttribute("aria-disabled"),
    why: describedBy === null ? "" : ((await why.textContent()) ?? ""),
    live: describedBy === null ? null : await why.getAttribute("aria-live")
  }
}

describe("a button that cannot act", () => {
  it("says why beside Save changes (nothing changed; no event picked) and sends nothing", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/why", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    const patches: Array<string> = []
    page.on("request", (request) => {
      if (request.method() === "PATCH") patches.push(request.url())
    })
    await signIn(page, `/dashboard/webhooks/${endpoint.endpointId}`)
    const edit = page.getByRole("region", { name: "Edit" })
    await edit.getByRole("button", { name: "Save changes" }).waitFor()
    expect(await whyOf(page, "Save changes")).toEqual({ disabled: "true", why: "Nothing to save.", live: "polite" })
    await edit.getByLabel("execution.completed").uncheck()
    await expect.poll(() => whyOf(page, "Save changes")).toEqual({ disabled: "true", why: "Pick at least one event.", live: "polite" })
    await edit.getByRole("button", { name: "Save changes" }).click({ force: true })
    await edit.getByLabel("execution.failed").check()
    await expect.poll(() => whyOf(page, "Save changes")).toEqual({ disabled: "false", why: "", live: null })
    expect(patches).toEqual([])
    expect((await api.webhooks.get(endpoint.endpointId)).events).toEqual(["execution.completed"])
    expect(await seriousViolations(page)).toEqual([])

    // The create form says the same when no event is picked.
    await page.goto(url("/dashboard/webhooks"))
    const create = page.getByRole("region", { name: "Add an endpoint" })
    await create.getByLabel("execution.completed").uncheck()
    await expect.poll(() => whyOf(page, "Create endpoint")).toEqual({ disabled: "true", why: "Pick at least one event.", live: "polite" })
    await page.close()
  })
})

describe("an endpoint form's error", () => {
  it("goes once a field of its form changes: creating, and saving an endpoint's changes", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/stale", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    const create = page.getByRole("region", { name: "Add an endpoint" })
    // A private address, which this service refuses to deliver to.
    await create.getByLabel("HTTPS URL").fill("https://127.0.0.1/refused")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    await create.getByRole("alert").waitFor()
    await create.getByLabel("HTTPS URL").fill("")
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)
    await create.getByLabel("HTTPS URL").fill("https://127.0.0.1/refused")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    await create.getByRole("alert").waitFor()
    await create.getByLabel("execution.failed").check()
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)

    await page.goto(url(`/dashboard/webhooks/${endpoint.endpointId}`))
    const edit = page.getByRole("region", { name: "Edit" })
    await edit.getByLabel("HTTPS URL").fill("https://127.0.0.1/refused")
    await edit.getByRole("button", { name: "Save changes" }).click()
    await edit.getByRole("alert").waitFor()
    await edit.getByLabel("HTTPS URL").fill("https://127.0.0.1/refused-too")
    await expect.poll(() => edit.getByRole("alert").count()).toBe(0)
    await page.close()
  })
})
