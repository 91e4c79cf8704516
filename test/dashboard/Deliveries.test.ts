/**
 * Resending and recovering webhook deliveries from an endpoint's page (decisions.md 9), in
 * headless Chromium against the real service and a local HTTPS receiver: a finished delivery is
 * resent and the new one appears in the history; failed deliveries since a time are recovered,
 * the count said; an inactive endpoint's refusal (409) shows the service's code and message; a
 * pinned key is offered neither.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { type WebhookEndpoint } from "../../client/index.ts"
import { KEY, PINNED_KEY } from "../support/Service.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { focused, screenshot, seriousViolations, watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

// Five quick attempts: a delivery to a failing receiver is failed within a second.
const h = await dashboardHarness({ SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,50,50,50,50" }, { receiver: true })
const { api, url, receiver } = h

const openEndpoint = async (page: Page, endpointId: string, key = KEY) => {
  await page.goto(url(`/dashboard/webhooks/${endpointId}`))
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Webhook endpoint" }).waitFor()
}

const history = (page: Page) => page.getByRole("region", { name: "Delivery history" })

/** The endpoint's deliveries once none is pending or delivering. */
const settled = (endpointId: string, count: number) =>
  eventually(async () => {
    const { deliveries } = await api.webhooks.listDeliveries(endpointId)
    return deliveries.length === count && deliveries.every((delivery) => delivery.status === "succeeded" || delivery.status === "failed")
      ? deliveries
      : undefined
  }, 15_000, `${count} settled deliveries`)

const receivedAt = (path: string) => receiver.received.filter((request) => request.path === path)

let succeeded: WebhookEndpoint

describe("resending and recovering deliveries", () => {
  it("resends a finished delivery: the new one appears in the history, for the same event, and is sent", async () => {
    receiver.respond = () => ({ status: 200 })
    succeeded = await api.webhooks.create({ url: receiver.url("/resend"), events: ["execution.succeeded"] })
    await api.executions.execute({ tool: "demo.echo", input: { resend: true }, userId: "user_resend" })
    const [original] = await settled(succeeded.endpointId, 1)
    const page = await h.browser.context.newPage()
    await openEndpoint(page, succeeded.endpointId)
    const deliveries = history(page).locator("li.delivery")
    await deliveries.locator(".badge-succeeded").waitFor()

    // The resent delivery is held at the receiver for a while: on its way, it offers no Resend.
    let release = () => {}
    receiver.respond = () => ({ status: 200, hold: new Promise<void>((resolve) => (release = resolve)) })
    await history(page).getByRole("button", { name: `Resend ${original?.deliveryId}` }).click()
    await history(page).getByText(/^Resent as whd_\S+, a new delivery of event /).waitFor()
    await expect.poll(() => deliveries.count()).toBe(2)
    const fresh = deliveries.first()
    expect(await fresh.getAttribute("data-delivery-id")).not.toBe(original?.deliveryId)
    expect(await fresh.textContent()).toContain(original?.eventId)
    expect(await fresh.getByRole("button", { name: /^Resend/ }).count()).toBe(0)
    await eventually(() => receivedAt("/resend").length === 2 || undefined, 10_000, "the resent delivery at the receiver")
    release()
    await fresh.locator(".badge-succeeded").waitFor({ timeout: 10_000 })
    await fresh.getByRole("button", { name: /^Resend/ }).waitFor()
    const [first, again] = receivedAt("/resend")
    expect(again?.headers["service-webhook-id"]).toBe(first?.headers["service-webhook-id"])
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })

  it("recovers the failed deliveries since a time, says how many, and the new deliveries appear", async () => {
    receiver.respond = () => ({ status: 500 })
    const endpoint = await api.webhooks.create({ url: receiver.url("/recover"), events: ["execution.failed"] })
    await api.executions.execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "user_recover" })
    await api.executions.execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "user_recover" })
    const failed = await settled(endpoint.endpointId, 2)
    expect(failed.map((delivery) => delivery.status)).toEqual(["failed", "failed"])
    const page = await h.browser.context.newPage()
    await openEndpoint(page, endpoint.endpointId)
    const deliveries = history(page).locator("li.delivery")
    await expect.poll(() => deliveries.locator(".badge-failed").count()).toBe(2)

    // Since tomorrow: nothing to recover.
    const since = page.getByLabel(/^Failed since \(your local time, UTC([+-]\d\d:\d\d)?\)$/)
    const tomorrow = new Date(Date.now() + 24 * 60 * 60 * 1000)
    const local = (date: Date) => `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, "0")}-${String(date.getDate()).padStart(2, "0")}T${String(date.getHours()).padStart(2, "0")}:${String(date.getMinutes()).padStart(2, "0")}`
    const dayAgo = await since.inputValue()
    await since.fill(local(tomorrow))
    await page.getByRole("button", { name: "Recover failed deliveries" }).click()
    await history(page).getByText(/^No failed deliveries since .+ to recover\.$/).waitFor()

    // Since a day ago (the default): both, sent again, and now received.
    receiver.respond = () => ({ status: 200 })
    await since.fill(dayAgo)
    await page.getByRole("button", { name: "Recover failed deliveries" }).click()
    await history(page).getByText(/^2 failed deliveries since .+ queued again\.$/).waitFor()
    await expect.poll(() => deliveries.count(), { timeout: 10_000 }).toBe(4)
    await expect.poll(() => deliveries.locator(".badge-succeeded").count(), { timeout: 15_000 }).toBe(2)
    const events = await deliveries.evaluateAll((items) => items.map((item) => item.querySelector(".delivery-head .muted code")?.textContent ?? ""))
    expect(new Set(events.slice(0, 2))).toEqual(new Set(failed.map((delivery) => delivery.eventId)))
    expect(await seriousViolations(page)).toEqual([])
    await screenshot(page, "webhook-recovered")
    await page.close()
  })

  // An outside audit: a resend from the second page showed the first and left the focus on the
  // page's body (the focused Resend left with its page); the next Tab began at the top.
  it("keeps the keyboard's place when a resend from a later page shows the first: the focus goes to the history's heading", async () => {
    receiver.respond = () => ({ status: 200 })
    const endpoint = await api.webhooks.create({ url: receiver.url("/paged"), events: ["execution.succeeded"] })
    for (let i = 0; i < 21; i++) await api.executions.execute({ tool: "demo.echo", input: { paged: i }, userId: "user_paged" })
    await settled(endpoint.endpointId, 21)
    const page = await h.browser.context.newPage()
    await openEndpoint(page, endpoint.endpointId)
    await page.getByRole("button", { name: "Next page" }).click()
    const resend = history(page).getByRole("button", { name: /^Resend whd_/ }).first()
    await expect.poll(() => history(page).locator("li.delivery").count(), { timeout: 10_000 }).toBe(1)
    await resend.focus()
    await page.keyboard.press("Enter")
    await expect.poll(() => page.getByRole("status").filter({ hasText: /^Resent as whd_/ }).count(), { timeout: 10_000 }).toBe(1)
    await expect.poll(() => focused(page), { timeout: 10_000 }).toBe("H2:#deliveries-title")
    await page.close()
    await api.webhooks.update(endpoint.endpointId, { active: false })
  })

  it("shows the service's code and message when the endpoint is inactive (409), and offers a pinned key neither action", async () => {
    const page = await h.browser.context.newPage()
    await openEndpoint(page, succeeded.endpointId)
    const resend = history(page).getByRole("button", { name: /^Resend whd_/ }).first()
    await resend.waitFor()
    // Made inactive elsewhere after the page loaded.
    await api.webhooks.update(succeeded.endpointId, { active: false })
    await resend.click()
    const refusal = history(page).locator("li.delivery").getByRole("alert").first()
    await expect.poll(() => refusal.locator(".error-code").textContent(), { timeout: 10_000 }).toBe("invalid_input")
    expect(await refusal.textContent()).toContain("HTTP 409")
    expect(await refusal.locator(".error-message").textContent()).toMatch(/inactive/)
    await page.getByRole("button", { name: "Recover failed deliveries" }).click()
    const recoverRefusal = page.getByRole("form", { name: "Recover failed deliveries" }).locator("xpath=following-sibling::div[@role='alert'][1]")
    await expect.poll(() => recoverRefusal.locator(".error-code").textContent(), { timeout: 10_000 }).toBe("invalid_input")
    expect(await recoverRefusal.textContent()).toContain("HTTP 409")
    expect(await recoverRefusal.locator(".error-message").textContent()).toMatch(/inactive/)
    // The refusal goes once the time it was about changes.
    await page.getByLabel(/^Failed since \(your local time, UTC([+-]\d\d:\d\d)?\)$/).fill("2020-01-02T03:04")
    await expect.poll(() => recoverRefusal.count()).toBe(0)
    await page.close()

    // Opened while inactive, the endpoint offers neither action and says why.
    const reopened = await h.browser.context.newPage()
    await openEndpoint(reopened, succeeded.endpointId)
    await history(reopened).getByText("This endpoint is inactive: activate it above to resend or recover its deliveries.").waitFor()
    await history(reopened).locator("li.delivery").first().waitFor()
    expect(await reopened.getByRole("button", { name: /Resend|Recover/ }).count()).toBe(0)
    await reopened.close()

    const pinned = await h.browser.context.newPage()
    const watched = watch(pinned)
    await openEndpoint(pinned, succeeded.endpointId, PINNED_KEY)
    await pinned.getByText("Not available with this key.").waitFor()
    expect(await pinned.getByRole("button", { name: /Resend|Recover/ }).count()).toBe(0)
    expect(watched.requests.filter((request) => request.includes("/v1/webhooks"))).toEqual([])
    await pinned.close()
  })
})

describe("a delivery its endpoint's deactivation stopped", () => {
  it("says it was stopped before any attempt, not that none was made yet", async () => {
    let release = () => {}
    receiver.respond = () => ({ status: 500, hold: new Promise<void>((resolve) => (release = resolve)) })
    const endpoint = await api.webhooks.create({ url: receiver.url("/stopped"), events: ["execution.succeeded"] })
    await api.executions.execute({ tool: "demo.echo", input: { first: true }, userId: "user_stopped" })
    await api.executions.execute({ tool: "demo.echo", input: { second: true }, userId: "user_stopped" })
    // The first is held at the receiver; the second waits behind it in the endpoint's lane.
    await eventually(() => receivedAt("/stopped").length === 1 || undefined, 10_000, "the first delivery at the receiver")
    await api.webhooks.update(endpoint.endpointId, { active: false })
    release()
    const deliveries = await settled(endpoint.endpointId, 2)
    const stopped = deliveries.find((delivery) => delivery.attempts.length === 0)
    expect(stopped?.status).toBe("failed")
    const page = await h.browser.context.newPage()
    await openEndpoint(page, endpoint.endpointId)
    const item = history(page).locator(`li.delivery[data-delivery-id="${stopped?.deliveryId}"]`)
    await item.getByText("Stopped before any attempt: its endpoint was deactivated or deleted.").waitFor()
    expect(await item.getByText("No attempt yet.").count()).toBe(0)
    await page.close()
    receiver.respond = () => ({ status: 200 })
  })
})
