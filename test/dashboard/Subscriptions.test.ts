/**
 * The subscriptions view in headless Chromium against the real service: the catalog's
 * descriptions (the trigger's hint, a filter's hint) show their `code` spans as code elements;
 * a creation naming no webhook endpoint is refused in the form, with the field's own message;
 * the service's refusal goes once a field of the form changes. The list: its row buttons sit in
 * a cell that stays a table cell (its bottom border the row's), and at 1280 x 800 a 64-character
 * user id takes at most two lines, the created time at most two, and the table fits its box.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { envelope, linesOf, seriousViolations, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

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

describe("the subscription form's endpoints", () => {
  it("says 'Pick at least one webhook endpoint.' at the field when none is ticked or typed, and sends nothing", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/pick-one", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    const posts: Array<string> = []
    page.on("request", (request) => {
      if (request.method() === "POST" && request.url().includes("/v1/subscriptions")) posts.push(request.url())
    })
    await signIn(page, "/dashboard/subscriptions")
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    await page.getByLabel("User id").fill("user_pick_one")
    const box = page.getByLabel(endpoint.endpointId)
    await box.waitFor()
    await page.getByLabel("Other webhook endpoint ids (optional)").fill(" , ")
    await page.getByRole("button", { name: "Create subscription" }).click()
    const create = page.getByRole("region", { name: "Subscribe to a trigger" })
    const message = create.getByText("Pick at least one webhook endpoint.")
    await message.waitFor()
    expect(await create.textContent()).not.toContain("Invalid body")
    // The field says it: the endpoints' group and the ids field are described by the message, and
    // the focus goes to the first endpoint to tick.
    const id = (await message.getAttribute("id")) ?? "none"
    expect(await create.locator("fieldset.endpoints").getAttribute("aria-describedby")).toContain(id)
    expect(await page.getByLabel("Other webhook endpoint ids (optional)").getAttribute("aria-describedby")).toContain(id)
    expect(await page.getByLabel("Other webhook endpoint ids (optional)").getAttribute("aria-invalid")).toBe("true")
    await expect.poll(() => page.evaluate("document.activeElement?.id")).toBe(`subscription-endpoint-${endpoint.endpointId}`)
    expect(posts).toEqual([])
    expect(await seriousViolations(page)).toEqual([])
    // Ticking one takes the message away; the creation then goes through.
    await box.check()
    await expect.poll(() => message.count()).toBe(0)
    await page.getByRole("button", { name: "Create subscription" }).click()
    await page.getByLabel("Ingest URL", { exact: true }).waitFor()
    expect(posts.length).toBe(1)
    await page.close()
  })
})

describe("the subscription form's error", () => {
  it("goes once a field of the form changes", async () => {
    const page = await h.browser.context.newPage()
    await page.route("**/v1/subscriptions", (route) =>
      route.request().method() === "POST" ? envelope(422, "invalid_input", "userId is not a user of this project.", false)(route) : route.continue())
    await signIn(page, "/dashboard/subscriptions")
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    await page.getByLabel("User id").fill("user_stale")
    await page.getByLabel("Other webhook endpoint ids (optional)").fill("whe_stale")
    await page.getByRole("button", { name: "Create subscription" }).click()
    const create = page.getByRole("region", { name: "Subscribe to a trigger" })
    await create.getByRole("alert").getByText("userId is not a user of this project.").waitFor()
    await page.getByLabel("User id").fill("user_other")
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)
    // A filter typed, or another trigger chosen, while an error shows takes it away; the choice is kept.
    await page.getByRole("button", { name: "Create subscription" }).click()
    await create.getByRole("alert").waitFor()
    await page.getByLabel("type (optional)").fill("x")
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)
    await page.getByRole("button", { name: "Create subscription" }).click()
    await create.getByRole("alert").waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("github.issue_opened")
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)
    expect(await page.getByLabel("Trigger", { exact: true }).inputValue()).toBe("github.issue_opened")
    await page.close()
  })
})


describe("the subscriptions list's row buttons", () => {
  it("sit in a cell that lays out as a table cell, its bottom edge the row's", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/actions-cell", events: ["trigger.*"] })
    const created = await api.subscriptions.create({ trigger: "demo.event", userId: "user_actions_cell", webhookEndpointIds: [endpoint.endpointId] })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 800 })
    await signIn(page, "/dashboard/subscriptions")
    const row = page.locator(`tr[data-subscription-id="${created.subscriptionId}"]`)
    await row.getByRole("button", { name: `Rotate ingest URL of ${created.subscriptionId}` }).waitFor()
    const cells = await row.evaluate((tr) => {
      const bottom = tr.getBoundingClientRect().bottom
      return [...tr.querySelectorAll(":scope > td")].map((td) => ({ display: td.ownerDocument.defaultView?.getComputedStyle(td).display, offBottom: Math.abs(td.getBoundingClientRect().bottom - bottom) }))
    })
    // Every cell of the row, the buttons' included, is a table cell whose bottom (and border) is the row's.
    expect(cells.map((cell) => cell.display)).toEqual(cells.map(() => "table-cell"))
    expect(cells.map((cell) => cell.offBottom < 1)).toEqual(cells.map(() => true))
    const buttons = row.locator("td").last()
    expect(await buttons.getByRole("button").allTextContents()).toEqual(["Rotate", "Delete"])
    await page.close()
  })
})

describe("the subscriptions list at 1280 x 800", () => {
  it("shows a 64-character user id in at most two lines, the created time in at most two, and fits its box", async () => {
    const longUser = "user_with_a_quite_long_identifier_that_is_sixty_four_chars_yyyyy"
    expect(longUser).toHaveLength(64)
    const endpoint = await api.webhooks.create({ url: "https://example.com/wide-columns", events: ["trigger.*"] })
    const created = await api.subscriptions.create({ trigger: "demo.event", userId: longUser, webhookEndpointIds: [endpoint.endpointId], filters: { type: "a_rather_long_event_type_to_filter_on" } })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 800 })
    await signIn(page, "/dashboard/subscriptions")
    const row = page.locator(`tr[data-subscription-id="${created.subscriptionId}"]`)
    await row.waitFor()
    expect(await linesOf(row.getByText(longUser, { exact: true })), "the user id").toBeLessThanOrEqual(2)
    expect(await linesOf(row.locator("time")), "the created time").toBeLessThanOrEqual(2)
    const region = page.getByRole("region", { name: "Trigger subscriptions, newest first" })
    const widths = await region.evaluate((box) => ({ content: box.scrollWidth, shown: box.clientWidth }))
    expect(widths.content, JSON.stringify(widths)).toBeLessThanOrEqual(widths.shown)
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })
})
