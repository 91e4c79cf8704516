/**
 * What the dashboard shows agrees with what it does, in headless Chromium against the real
 * service: a filter value from the URL that the list cannot use is left out of the form, the
 * request and the URL alike (a pinned key's user id, a malformed subscription id too); an error about a field the form no
 * longer has goes with it; a shown-once ingest URL goes with its deleted subscription.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY, PINNED_KEY } from "../support/Service.ts"
import { settled, signIn as signInAt, submitPushSubscription, subscriptionIdOf, watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = (page: Page, path: string, key = KEY) => signInAt(page, url(path), key)

describe("filters from the URL", () => {
  it("leaves out a trigger the catalog does not have: not chosen, not sent, not kept in the URL", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page, "/dashboard/trigger-events?trigger=nope.nope")
    await page.getByRole("heading", { level: 2, name: "Events" }).waitFor()
    await settled(page)
    expect(await page.getByLabel("Trigger", { exact: true }).inputValue()).toBe("")
    const listed = watched.requests.filter((request) => request.includes("/v1/trigger-events"))
    expect(listed.length).toBeGreaterThan(0)
    expect(listed.filter((request) => request.includes("trigger="))).toEqual([])
    await expect.poll(() => new URL(page.url()).search).toBe("")
    await page.close()
  })

  it("leaves out a subscription id that is not one: not filled in, not sent, not kept in the URL", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page, "/dashboard/trigger-events?subscriptionId=trgsub_x&trigger=demo.event")
    await page.getByRole("heading", { level: 2, name: "Events" }).waitFor()
    await settled(page)
    expect(await page.getByRole("main").getByRole("alert").count()).toBe(0)
    expect(await page.getByLabel("Subscription id").inputValue()).toBe("")
    const listed = watched.requests.filter((request) => request.includes("/v1/trigger-events"))
    expect(listed.length).toBeGreaterThan(0)
    expect(listed.filter((request) => request.includes("subscriptionId="))).toEqual([])
    await expect.poll(() => new URL(page.url()).search).toBe("?trigger=demo.event")
    // A well-formed one is kept, whether or not the project has it.
    const wellFormed = `trgsub_${"0".repeat(32)}`
    await page.goto(url(`/dashboard/trigger-events?subscriptionId=${wellFormed}`))
    await page.getByRole("heading", { level: 2, name: "Events" }).waitFor()
    await settled(page)
    expect(await page.getByLabel("Subscription id").inputValue()).toBe(wellFormed)
    expect(new URL(page.url()).search).toBe(`?subscriptionId=${wellFormed}`)
    expect(await page.getByRole("main").getByRole("alert").count()).toBe(0)
    // The form does not apply one the URL would drop: the browser holds it back, as a malformed user id.
    const field = page.getByLabel("Subscription id")
    await field.fill("trgsub_x")
    await page.getByRole("button", { name: "Apply filters" }).click()
    expect(await page.evaluate(`document.getElementById("events-subscription").validity.patternMismatch`)).toBe(true)
    expect(new URL(page.url()).search).toBe(`?subscriptionId=${wellFormed}`)
    // Outside audit: the browser's own bubble was all that said so (none in a headless browser, and
    // it goes at once): the page says it, beside the field, until the field changes.
    await expect.poll(() => field.getAttribute("aria-invalid")).toBe("true")
    const said = page.locator("#events-subscription-error")
    expect(await said.textContent()).toContain("Not applied")
    expect(await said.isVisible()).toBe(true)
    expect(await field.evaluate((input) => input.getAttribute("aria-describedby"))).toBe("events-subscription-error")
    await field.fill(wellFormed)
    expect(await field.getAttribute("aria-invalid")).toBeNull()
    expect(await said.count()).toBe(0)
    await page.close()
  })

  it("drops another user's id from the URL for a key pinned to its own user", async () => {
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: "user_2" })
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page, "/dashboard/executions?status=succeeded&userId=user_2", PINNED_KEY)
    await page.getByRole("heading", { level: 2, name: "Executions" }).waitFor()
    await settled(page)
    await expect.poll(() => new URL(page.url()).search).toBe("?status=succeeded")
    expect(watched.requests.filter((request) => request.includes("/v1/") && request.includes("userId=user_2"))).toEqual([])
    await page.close()
  })
})

describe("the subscriptions view", () => {
  it("drops an error about the poll interval when the trigger chosen has no poll interval", async () => {
    const page = await h.browser.context.newPage()
    await page.route("**/v1/subscriptions", (route) =>
      route.request().method() === "POST"
        ? route.fulfill({
          status: 422,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "invalid_input", message: "pollIntervalSeconds must be an integer from 30 to 86400.", retryable: false }, requestId: "req_poll" })
        })
        : route.continue())
    await signIn(page, "/dashboard/subscriptions")
    await page.getByLabel("Trigger", { exact: true }).selectOption("github.issue_opened")
    await page.getByLabel("User id").fill("user_poll")
    await page.getByLabel("owner (required)").fill("octo")
    await page.getByLabel("repo (required)").fill("hello")
    await page.getByLabel("Other webhook endpoint ids (optional)").fill("whe_x")
    await page.getByLabel(/^Poll interval/).fill("5")
    await page.getByRole("button", { name: "Create subscription" }).click()
    const create = page.getByRole("region", { name: "Subscribe to a trigger" })
    await create.getByRole("alert").getByText(/pollIntervalSeconds/).waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    await expect.poll(() => create.getByRole("alert").count()).toBe(0)
    await page.close()
  })

  it("says the poll interval's range beside its field, and leaves the judging to the service", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await page.getByLabel("Trigger", { exact: true }).selectOption("github.issue_opened")
    const field = page.getByLabel(/^Poll interval/)
    const describedBy = (await field.getAttribute("aria-describedby")) ?? ""
    const hint = await page.locator(`[id="${describedBy}"]`).textContent()
    // The service's default minimum, in a customer's terms: not the operator's setting that changes it.
    expect(hint).toMatch(/service's minimum \(30 s by default\)/)
    expect(hint).not.toMatch(/SERVICE_|_SECONDS/)
    expect(hint).toMatch(/86400 s/)
    expect(hint).toMatch(/60 s when left empty/)
    // The browser does not refuse what a service configured with a lower minimum takes.
    expect(await field.getAttribute("min")).toBe("1")
    await page.close()
  })

  it("removes a shown ingest URL once its subscription is deleted", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/consistency", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await submitPushSubscription(page, { userId: "user_shown", endpointId: endpoint.endpointId })
    const ingestUrl = await page.getByLabel("Ingest URL", { exact: true }).inputValue()
    const id = subscriptionIdOf(ingestUrl)
    const row = page.locator(`tr[data-subscription-id="${id}"]`)
    await row.getByRole("button", { name: `Delete ${id}` }).click()
    await row.getByRole("button", { name: `Confirm deleting ${id}` }).click()
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0)
    await expect.poll(() => page.getByLabel("Ingest URL", { exact: true }).count()).toBe(0)
    await page.close()
  })
})

describe("a list's page", () => {
  it("is kept through a reload and through Back from a record opened on it", async () => {
    for (let i = 0; i < 21; i++) await api.executions.execute({ tool: "demo.echo", input: { i }, userId: "user_pages" })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?userId=user_pages")
    const list = page.getByRole("region", { name: "Executions", exact: true })
    await list.getByRole("button", { name: "Next page" }).click()
    await list.getByText("Page 2").waitFor()
    await settled(page)
    expect(await list.locator("tbody tr").count()).toBe(1)
    const onPage2 = (await list.locator("tbody tr a").first().textContent()) ?? ""
    // The cursor is not in the URL.
    expect(new URL(page.url()).search).toBe("?userId=user_pages")

    await page.reload()
    await list.getByText("Page 2").waitFor({ timeout: 10_000 })
    await settled(page)
    expect(await list.locator("tbody tr a").first().textContent()).toBe(onPage2)

    await list.getByRole("link", { name: onPage2 }).click()
    await page.getByRole("heading", { level: 2, name: onPage2 }).waitFor()
    await page.goBack()
    await list.getByText("Page 2").waitFor({ timeout: 10_000 })
    await settled(page)
    expect(await list.locator("tbody tr a").first().textContent()).toBe(onPage2)
    // The first page is a press away, and a new visit starts there.
    await list.getByRole("button", { name: "First page" }).click()
    await list.getByText("Page 1").waitFor()
    await page.goto(url("/dashboard/executions?userId=user_pages"))
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    await settled(page)
    expect(await list.locator("tbody tr").count()).toBe(20)
    await page.close()
  })
})
