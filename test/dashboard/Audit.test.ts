/**
 * Findings of the accessibility and UX audit, in headless Chromium against the real service: a
 * delete says what it deleted in a polite live region (the focus goes where it went before); a
 * secret shown once says that putting it away or leaving the page loses it, and so do the
 * controls that do (an ingest URL's spelling "URL"); a trigger event's row links to its subscription and its endpoints'
 * deliveries; and at desktop width an id in a table is never broken across lines.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { focused, screenshot, seriousViolations, settled, signIn as signInAt, submitPushSubscription } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = (page: Page, path: string) => signInAt(page, url(path))


/** The text of every live region on the page (role=status), joined. */
const statuses = (page: Page) => page.evaluate<string>(`[...document.querySelectorAll('[role="status"]')].map((e) => e.textContent).join(" | ")`)

/** A push subscription with one endpoint, and one event ingested for it. */
const ingested = async (name: string) => {
  const endpoint = await api.webhooks.create({ url: `https://example.com/${name}`, events: ["trigger.*"] })
  const subscription = await api.subscriptions.create({ trigger: "demo.event", userId: `user_${name}`, webhookEndpointIds: [endpoint.endpointId] })
  const answer = await fetch(url(new URL(subscription.ingestUrl ?? "").pathname), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ type: "event_callback", event_id: `Ev_${name}`, event_time: Math.floor(Date.now() / 1000), event: { type: name } })
  })
  expect(answer.status).toBe(202)
  return { endpoint, subscription }
}

describe("a delete", () => {
  it("says which endpoint it deleted, on the list it returns to, with the focus on the view's heading", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/audit-delete", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/webhooks/${endpoint.endpointId}`)
    await page.getByRole("button", { name: "Delete endpoint" }).click()
    await page.getByRole("button", { name: "Confirm delete" }).click()
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 10_000 }).toBe("/dashboard/webhooks")
    await expect.poll(() => statuses(page), { timeout: 10_000 }).toContain(`Endpoint ${endpoint.endpointId} deleted.`)
    await expect.poll(() => focused(page)).toBe("H1:Webhook endpoints")
    await settled(page)
    expect(await seriousViolations(page)).toEqual([])
    // Said for the list it returned to only: another view does not repeat it.
    await page.getByRole("link", { name: "Files" }).click()
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    expect(await statuses(page)).not.toContain("deleted")
    await page.close()
  })

  it("says which subscription it deleted, with the focus on the list's heading", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/audit-delete-subscription", events: ["trigger.*"] })
    const created = await api.subscriptions.create({ trigger: "demo.event", userId: "user_audit_delete", webhookEndpointIds: [endpoint.endpointId] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    const row = page.locator(`tr[data-subscription-id="${created.subscriptionId}"]`)
    await row.getByRole("button", { name: `Delete ${created.subscriptionId}` }).click()
    await row.getByRole("button", { name: `Confirm deleting ${created.subscriptionId}` }).click()
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0)
    await expect.poll(() => statuses(page)).toContain(`Subscription ${created.subscriptionId} deleted.`)
    await expect.poll(() => focused(page)).toBe("H2:#subscriptions-title")
    await page.close()
  })
})

describe("a secret shown once", () => {
  it("says that putting it away or leaving the page loses it, and the controls that do say so", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    await page.getByLabel("HTTPS URL").fill("https://example.com/audit-secret")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    const panel = page.locator("section.secret")
    await panel.waitFor()
    const said = (await panel.textContent()) ?? ""
    expect(said).toContain("Shown once.")
    expect(said).toMatch(/leave this page|reload/i)
    await panel.getByRole("button", { name: "Copy signing secret" }).waitFor()
    // The way out of the panel, and the link away from the page, say the secret goes.
    expect(await panel.getByRole("button", { name: /^I have stored it/ }).textContent()).toBe("I have stored it: remove the signing secret from the page")
    const link = panel.getByRole("link", { name: "Open the endpoint" })
    const linkSays = await link.evaluate((element) => element.closest("p")?.textContent ?? "")
    expect(linkSays).toContain("the secret is not shown there")
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })

  it("spells URL as URL on an ingest URL's buttons", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/audit-ingest-url", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await submitPushSubscription(page, { userId: "user_audit_url", endpointId: endpoint.endpointId })
    const panel = page.locator("section.secret")
    await panel.waitFor()
    const buttons = await panel.getByRole("button").allTextContents()
    expect(buttons).toEqual(["Copy ingest URL", "I have stored it: remove the ingest URL from the page"])
    await page.close()
  })
})

describe("a trigger event's row", () => {
  it("links to its subscription's page and to its endpoints' deliveries", async () => {
    const { endpoint, subscription } = await ingested("audit-links")
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/trigger-events?subscriptionId=${subscription.subscriptionId}`)
    const row = page.locator("tbody tr").first()
    await row.waitFor()
    await expect.poll(() => row.getByRole("link", { name: endpoint.endpointId }).count(), { timeout: 15_000 }).toBe(1)
    expect(await row.getByRole("link", { name: endpoint.endpointId }).getAttribute("href")).toBe(`/dashboard/webhooks/${endpoint.endpointId}`)
    await row.getByRole("link", { name: subscription.subscriptionId }).click()
    await expect.poll(() => new URL(page.url()).pathname).toBe(`/dashboard/subscriptions/${subscription.subscriptionId}`)
    await page.getByRole("heading", { level: 1, name: "Trigger subscription" }).waitFor()
    await page.getByText(`user_audit-links`).waitFor()
    await settled(page)
    expect(await seriousViolations(page)).toEqual([])
    // The subscription's page leads on to its events and its endpoints.
    expect(await page.getByRole("link", { name: endpoint.endpointId }).getAttribute("href")).toBe(`/dashboard/webhooks/${endpoint.endpointId}`)
    await page.getByRole("link", { name: "Events of this subscription" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe(`?subscriptionId=${subscription.subscriptionId}`)
    // The list leads to the same page.
    await page.getByRole("link", { name: "Subscriptions" }).click()
    const listed = page.locator(`tr[data-subscription-id="${subscription.subscriptionId}"]`)
    expect(await listed.getByRole("link", { name: subscription.subscriptionId }).getAttribute("href")).toBe(`/dashboard/subscriptions/${subscription.subscriptionId}`)
    await page.close()
  })
})

describe("ids in tables at 1280 px", () => {
  it("keeps every id in a table on one line", async () => {
    await ingested("audit-wrap")
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: "user_audit_wrap" })
    await api.files.create({ name: "audit-wrap.txt", content: new TextEncoder().encode("w") })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 1280, height: 900 })
    await signIn(page, "/dashboard/files")
    for (const path of ["/dashboard/trigger-events", "/dashboard/subscriptions", "/dashboard/webhooks", "/dashboard/executions", "/dashboard/files"]) {
      await page.goto(url(path))
      await page.locator("table tbody tr").first().waitFor()
      await settled(page)
      // An inline element broken across lines has one box per line.
      const broken = await page.evaluate<ReadonlyArray<string>>(
        `[...document.querySelectorAll("td code:not(.filters-json)")].filter((e) => e.getClientRects().length > 1).map((e) => e.textContent)`
      )
      expect(broken, path).toEqual([])
      expect(await seriousViolations(page), path).toEqual([])
      await screenshot(page, `audit-1280${path.replaceAll("/", "-")}`)
    }
    await page.close()
  })
})
