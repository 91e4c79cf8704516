/**
 * Where the keyboard focus is after the dashboard is busy, in headless Chromium against the real
 * service. A control that cannot act while a request is in flight says so with `aria-disabled`
 * rather than `disabled` (which drops the focus to the document's body): every Refresh, pressed
 * or while the list polls; Sign in; Create endpoint; Create subscription; Save changes. And an
 * action whose control goes away (filters applied, a row deleted or cancelled out of its filter)
 * moves the focus to the list's heading.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { createPollingSubscription, focused, settled, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url, service } = h


/** Signs in on whatever dashboard page `path` is. */
const signIn = (page: Page, path = "/dashboard") => signInAt(page, url(path))

describe("the focus while a control is busy", () => {
  it("stays on Refresh while a list with a running execution polls", async () => {
    await api.executions.execute({ tool: "demo.sleep", input: { ms: 60_000 }, userId: "user_focus_poll", mode: "async" })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?userId=user_focus_poll")
    await page.locator("tbody tr").first().waitFor()
    const refresh = page.getByRole("region", { name: "Executions" }).getByRole("button", { name: "Refresh" })
    await refresh.focus()
    // Two polls answered while the button has the focus.
    let polls = 0
    page.on("requestfinished", (request) => {
      if (request.url().includes("/v1/executions?")) polls++
    })
    await expect.poll(() => polls, { timeout: 10_000 }).toBeGreaterThanOrEqual(2)
    await settled(page)
    expect(await focused(page)).toBe("BUTTON:Refresh")
    await page.close()
  })

  it("stays on Refresh when it is pressed, in every list", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/focus-refresh", events: ["trigger.*"] })
    await api.subscriptions.create({ trigger: "demo.event", userId: "user_focus", webhookEndpointIds: [endpoint.endpointId] })
    const page = await h.browser.context.newPage()
    await signIn(page)
    const lists = [
      ["/dashboard/files", "Files in the project", "/v1/files?"],
      ["/dashboard/webhooks", "Endpoints", "/v1/webhooks?"],
      [`/dashboard/webhooks/${endpoint.endpointId}`, "Delivery history", "/deliveries?"],
      ["/dashboard/subscriptions", "Subscriptions", "/v1/subscriptions?"],
      ["/dashboard/trigger-events", "Events", "/v1/trigger-events?"],
      ["/dashboard/executions", "Executions", "/v1/executions?"]
    ] as const
    for (const [path, region, request] of lists) {
      await page.goto(url(path))
      await page.getByRole("heading", { level: 2, name: region, exact: true }).waitFor()
      await settled(page)
      const refresh = page.getByRole("region", { name: region, exact: true }).getByRole("button", { name: "Refresh" })
      await refresh.focus()
      const answered = page.waitForResponse((response) => response.url().includes(request))
      await page.keyboard.press("Enter")
      await answered
      await settled(page)
      expect(await focused(page), path).toBe("BUTTON:Refresh")
    }
    await page.close()
  })

  it("stays on the key field or the Sign in button after a failed sign-in", async () => {
    const page = await h.browser.context.newPage()
    await page.goto(url("/dashboard"))
    await page.getByLabel("API key").fill("not_a_key_of_this_service")
    await page.getByLabel("API key").press("Enter")
    await page.getByRole("alert").waitFor()
    expect(await focused(page)).toBe("INPUT:#api-key")
    await page.getByRole("button", { name: "Sign in" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/auth_/)
    await expect.poll(() => page.evaluate(`document.querySelector("main button")?.textContent`)).toBe("Sign in")
    expect(await focused(page)).toBe("BUTTON:Sign in")
    await page.close()
  })

  it("stays on Create endpoint after the service refuses the endpoint", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    // A private address, which this service refuses to deliver to.
    await page.getByLabel("HTTPS URL").fill("https://127.0.0.1/refused")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    await page.getByRole("region", { name: "Add an endpoint" }).getByRole("alert").waitFor()
    expect(await focused(page)).toBe("BUTTON:Create endpoint")
    await page.close()
  })

  it("stays on Create subscription once a polling subscription (no ingest URL) is created", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/focus-polling", events: ["trigger.*"] })
    const connection = await service.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "user_focus_polling", toolkit: "github", authClass: "bearer", credentials: { token: "gh-focus" }, scopes: ["issues:read"] }
    })
    expect(connection.status).toBe(201)
    const connectionId = String(((await connection.json()) as { connectionId: string }).connectionId)
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await createPollingSubscription(page, { userId: "user_focus_polling", connectionId, endpointId: endpoint.endpointId })
    expect(await focused(page)).toBe("BUTTON:Create subscription")
    await page.close()
  })

  it("stays on Save changes once an endpoint's changes are saved", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/focus-save", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/webhooks/${endpoint.endpointId}`)
    await page.getByLabel("HTTPS URL").fill("https://example.com/focus-saved")
    await page.getByRole("button", { name: "Save changes" }).click()
    await page.getByText("Changes saved.").waitFor()
    await page.locator("dd.url", { hasText: "https://example.com/focus-saved" }).waitFor()
    expect(await focused(page)).toBe("BUTTON:Save changes")
    await page.close()
  })
})

describe("the focus when the control pressed goes away", () => {
  it("moves to the list's heading when filters are applied (button or Enter) or cleared", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions")
    await page.getByLabel("Status").selectOption("succeeded")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("?status=succeeded")
    await expect.poll(() => focused(page)).toBe("H2:#executions-title")
    await page.getByLabel("User id").fill("user_focus_filter")
    await page.getByLabel("User id").press("Enter")
    await expect.poll(() => new URL(page.url()).search).toBe("?status=succeeded&userId=user_focus_filter")
    await expect.poll(() => focused(page)).toBe("H2:#executions-title")

    await page.goto(url("/dashboard/trigger-events"))
    await page.getByRole("heading", { level: 2, name: "Events" }).waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("?trigger=demo.event")
    await expect.poll(() => focused(page)).toBe("H2:#trigger-events-title")
    // A well-formed id (a malformed one is not applied: Consistency.test.ts).
    const subscriptionId = `trgsub_${"f".repeat(32)}`
    await page.getByLabel("Subscription id").fill(subscriptionId)
    await page.getByLabel("Subscription id").press("Enter")
    await expect.poll(() => new URL(page.url()).search).toBe(`?subscriptionId=${subscriptionId}&trigger=demo.event`)
    await expect.poll(() => focused(page)).toBe("H2:#trigger-events-title")
    await page.getByRole("button", { name: "Clear" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("")
    await expect.poll(() => focused(page)).toBe("H2:#trigger-events-title")
    await page.close()
  })

  // A deleted subscription moves the focus to the list's heading: Audit.test.ts checks it, with
  // the words the page says.

  it("moves to the list's heading when a cancelled execution leaves a list of running ones", async () => {
    const target = await api.executions.execute({ tool: "demo.sleep", input: { ms: 60_000 }, userId: "user_focus_cancel", mode: "async" })
    await expect.poll(async () => (await api.executions.get(target.executionId)).status, { timeout: 10_000 }).toBe("running")
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?status=running&userId=user_focus_cancel")
    const row = page.locator(`tr[data-execution-id="${target.executionId}"]`)
    await row.getByRole("button", { name: `Cancel ${target.executionId}` }).click()
    await row.getByRole("button", { name: `Confirm cancelling ${target.executionId}` }).click()
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0)
    await expect.poll(() => focused(page)).toBe("H2:#executions-title")
    await page.close()
  })
})
