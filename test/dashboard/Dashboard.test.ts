/**
 * The dashboard end to end, in headless Chromium against the real service in this process: sign
 * in, upload, webhook endpoints with a delivery watched until it succeeds at a local HTTPS
 * receiver, executions, a pinned key's refusals, and trigger subscriptions through ingest to a
 * delivered event. Each view is scanned with axe-core and saved as a screenshot under
 * test-output/dashboard/. Markup stored through the API (a file name, an endpoint URL) must show
 * as text and never run; the key must never reach a URL, the console or the page's HTML.
 *
 * Longer than 300 lines on purpose: one browser, one service and one receiver serve a journey
 * whose steps build on each other (an endpoint, then its delivery, then a subscription to it).
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { BUDGET_BYTES, loadOnce, servedBytes } from "../../dashboard/scripts/budget.ts"
import { KEY, PINNED_KEY } from "../support/Service.ts"
import { eventually } from "../support/WebhookReceiver.ts"
import { createPollingSubscription, screenshot, seriousViolations, signIn as signInAt, subscriptionIdOf, type Watched, watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const XSS_NAME = "<img src=x onerror=window.__xss=1>.txt"
const XSS_PATH = "/hooks/<img src=x onerror=window.__xss=2>"

// The built dashboard, the service and its receiver are set up while the file loads.
// A failed first attempt is retried after 4 s: long enough to watch "next retry" in the page.
const h = await dashboardHarness({ SERVICE_WEBHOOK_RETRY_DELAYS_MS: "0,4000,4000,4000,4000" }, { receiver: true })
const { api, url, receiver, service } = h

const expectAccessible = async (page: Page, view: string) => {
  expect(await seriousViolations(page), `axe on ${view}`).toEqual([])
}

/** The view is ready, scanned, and saved as a picture. */
const check = async (page: Page, view: string) => {
  // Polled through evaluate: waitForFunction's polling evaluates its text in the page, which the
  // dashboard's CSP (no unsafe-eval) refuses once a first try has failed.
  await expect.poll(() => page.evaluate(`document.querySelector("[aria-busy=true], .loading") === null`), { timeout: 10_000 }).toBe(true)
  await expectAccessible(page, view)
  await screenshot(page, view)
}

const signIn = (page: Page, key: string) => signInAt(page, url("/dashboard"), key)

const goTo = async (page: Page, label: string, heading: string) => {
  await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: label }).click()
  await page.getByRole("heading", { level: 1, name: heading }).waitFor()
}

const expectNoLeak = async (page: Page, watched: Watched, key: string) => {
  expect(page.url()).not.toContain(key)
  expect(watched.requests.filter((request) => request.includes(key))).toEqual([])
  expect(watched.console.filter((line) => line.includes(key))).toEqual([])
  expect(await page.content()).not.toContain(key)
  expect(watched.errors).toEqual([])
}

const expectNothingRan = async (page: Page) => {
  expect(await page.evaluate("window.__xss")).toBeUndefined()
  expect(await page.locator("img").count()).toBe(0)
}

describe("the dashboard in Chromium", () => {
  it("signs in, uploads a file, manages an endpoint and watches a delivery succeed after a retry", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)

    // Sign-in: a wrong key shows the service's code and message; the right one is kept in
    // sessionStorage only.
    await page.goto(url("/dashboard"))
    await page.getByLabel("API key").waitFor()
    await check(page, "sign-in")
    await page.getByLabel("API key").fill("not_a_real_key_000000")
    await page.getByRole("button", { name: "Sign in" }).click()
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/auth_(missing|expired)/)
    await check(page, "sign-in-error")
    await signIn(page, KEY)
    await expect.poll(() => page.getByTestId("project-id").textContent()).toBe("proj_test")
    expect(await page.getByTestId("key-kind").textContent()).toBe("unpinned project key")
    expect(await page.evaluate("Object.values(sessionStorage)")).toEqual([KEY])
    expect(await page.evaluate("Object.keys(localStorage).length + document.cookie.length")).toBe(0)

    // Files: upload by picking a file whose name is markup; it shows as text and runs nothing.
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    await page.getByLabel("Files to upload").setInputFiles({ name: XSS_NAME, mimeType: "text/plain", buffer: Buffer.from("hello dashboard") })
    const uploads = page.getByRole("region", { name: "Uploads" })
    await uploads.getByText(XSS_NAME, { exact: true }).waitFor()
    const fileId = (await uploads.locator("code.file-id").textContent()) ?? ""
    expect(fileId).toMatch(/^file_/)
    const list = page.getByRole("region", { name: "Files in the project" })
    await list.getByRole("cell", { name: XSS_NAME, exact: true }).waitFor()
    await list.getByRole("button", { name: `Metadata of ${XSS_NAME}` }).click()
    await list.getByRole("definition").getByText("15 bytes", { exact: true }).waitFor()
    await expectNothingRan(page)
    await check(page, "files")
    // Cursor paging: 21 files are two pages of 20 and 1.
    for (let n = 0; n < 20; n++) await api.files.create({ name: `more-${n}.txt`, content: new TextEncoder().encode(`${n}`) })
    await list.getByRole("button", { name: "Refresh" }).click()
    await expect.poll(() => list.getByRole("row").count()).toBe(21)
    await list.getByRole("button", { name: "Next page" }).click()
    await list.getByText("Page 2").waitFor()
    await list.getByRole("cell", { name: XSS_NAME, exact: true }).waitFor()
    expect(await list.getByRole("button", { name: "Next page" }).isDisabled()).toBe(true)
    await list.getByRole("button", { name: "Previous page" }).click()
    await list.getByText("Page 1").waitFor()
    await list.getByRole("cell", { name: "more-19.txt", exact: true }).waitFor()

    // Webhooks: create an endpoint whose URL path is markup; the secret is shown once.
    receiver.respond = (_request, index) => ({ status: index === 0 ? 503 : 200 })
    await goTo(page, "Webhooks", "Webhook endpoints")
    await page.getByText("No webhook endpoints yet.").waitFor()
    await check(page, "webhooks-empty")
    await page.getByLabel("HTTPS URL").fill(receiver.url(XSS_PATH))
    await page.getByRole("button", { name: "Create endpoint" }).click()
    const secretField = page.getByLabel("Signing secret", { exact: true })
    await secretField.waitFor()
    const secret = await secretField.inputValue()
    expect(secret).toMatch(/^whsec_/)
    // Shown once, so it must be seen: the panel's heading takes the focus, inside the window.
    await expect.poll(() => page.evaluate(`document.activeElement?.tagName`), { timeout: 5_000 }).toBe("H3")
    expect(await page.evaluate(`document.activeElement?.textContent`)).toMatch(/^Endpoint whe_\S+ created$/)
    const where = await page.evaluate<{ top: number; bottom: number; height: number }>(`(() => { const r = document.activeElement.getBoundingClientRect(); return { top: r.top, bottom: r.bottom, height: innerHeight } })()`)
    expect(where.top, JSON.stringify(where)).toBeGreaterThanOrEqual(-1)
    expect(where.bottom, JSON.stringify(where)).toBeLessThanOrEqual(where.height + 1)
    await page.getByRole("link", { name: "Open the endpoint" }).waitFor()
    await page.getByRole("button", { name: "Copy signing secret" }).click()
    await page.getByText("Copied to the clipboard.").waitFor()
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(secret)
    await check(page, "webhooks-created")
    await page.getByRole("button", { name: "I have stored it" }).click()
    expect(await page.content()).not.toContain(secret)
    const [endpoint] = (await api.webhooks.list()).webhooks
    expect(endpoint?.url).toContain("/hooks/")
    const endpointLink = page.getByRole("link", { name: endpoint?.url ?? "" })
    await endpointLink.waitFor()
    await expectNothingRan(page)

    // A terminal execution through the API: its delivery fails once (503), is retried, and
    // succeeds; the page follows it by polling.
    const execution = await api.executions.execute({ tool: "demo.echo", input: { hello: "dashboard" }, userId: "user_1" })
    expect(execution.status).toBe("succeeded")
    await endpointLink.click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoint" }).waitFor()
    const timeline = page.getByRole("list", { name: /^Attempts of whd_/ })
    await timeline.getByText("HTTP 503").waitFor({ timeout: 15_000 })
    await page.getByText(/^Next retry:/).waitFor({ timeout: 5_000 })
    await page.getByText("Refreshing every 2 seconds while deliveries are in progress.").waitFor()
    await screenshot(page, "webhook-delivery-retrying")
    await timeline.getByText("HTTP 200").waitFor({ timeout: 20_000 })
    await page.locator(".delivery .badge-succeeded").waitFor()
    expect(await timeline.getByRole("listitem").count()).toBe(2)
    expect(receiver.received.length).toBe(2)
    await expectNothingRan(page)
    await check(page, "webhook-detail")

    // Edit events and active, rotate (the new secret shown once), then delete.
    await page.getByLabel("execution.failed", { exact: false }).first().check()
    await page.locator("#edit-active").uncheck()
    await page.getByRole("button", { name: "Save changes" }).click()
    await page.getByText("Changes saved.").waitFor()
    await page.getByRole("definition").filter({ hasText: "execution.completed, execution.failed" }).waitFor()
    expect((await api.webhooks.get(endpoint?.endpointId ?? "")).active).toBe(false)
    await page.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("button", { name: "Confirm rotate" }).click()
    const rotated = await page.getByLabel("New signing secret", { exact: true }).inputValue()
    expect(rotated).toMatch(/^whsec_/)
    expect(rotated).not.toBe(secret)
    // The details follow: the prefix is the new secret's.
    await page.getByRole("definition").filter({ hasText: `${rotated.slice(0, 10)}…` }).waitFor()
    await check(page, "webhook-rotated")
    await page.getByRole("button", { name: "I have stored it" }).click()
    await page.getByRole("button", { name: "Delete endpoint" }).click()
    await page.getByRole("button", { name: "Confirm delete" }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    await page.getByText("No webhook endpoints yet.").waitFor()

    // Executions: filtered list, then one record with its output.
    await goTo(page, "Executions", "Executions")
    await page.getByLabel("Status").selectOption("succeeded")
    await page.getByLabel("Tool").selectOption("demo.echo")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await page.getByRole("link", { name: execution.executionId }).waitFor()
    await check(page, "executions")
    await page.getByRole("link", { name: execution.executionId }).click()
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await expect.poll(() => page.getByLabel("Output").textContent()).toContain("\"hello\": \"dashboard\"")
    await check(page, "execution-detail")

    // A reload keeps the session (sessionStorage); signing out forgets the key.
    await page.reload()
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await expectNoLeak(page, watched, KEY)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").waitFor()
    expect(await page.evaluate("sessionStorage.length")).toBe(0)
    await page.close()
  }, 120_000)

  it("tells a pinned key which views it may not use, instead of failing", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    // By keyboard alone: the key field has focus on load, Enter submits.
    await page.goto(url("/dashboard"))
    await page.getByLabel("API key").waitFor()
    expect(await page.evaluate("document.activeElement.id")).toBe("api-key")
    await page.keyboard.type(PINNED_KEY)
    await page.keyboard.press("Enter")
    await expect.poll(() => page.getByTestId("key-kind").textContent()).toBe("pinned to user user_1")
    // Signed in, the focus is on the view's heading; from the top of the page, the first Tab
    // reaches the skip link, which is then visible.
    await expect.poll(() => page.evaluate("document.activeElement.textContent")).toBe("Staged files")
    await page.evaluate("document.body.tabIndex = -1; document.body.focus(); document.body.removeAttribute('tabindex')")
    await page.keyboard.press("Tab")
    expect(await page.evaluate("document.activeElement.textContent")).toBe("Skip to content")
    expect(await page.getByRole("link", { name: "Skip to content" }).isVisible()).toBe(true)
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    await page.getByText("Not available with this key.").waitFor()
    // Uploading (here by dropping a file) and reading one file by id work with any key.
    await page.evaluate(`(() => {
      const transfer = new DataTransfer()
      transfer.items.add(new File(["pinned"], "pinned.txt", { type: "text/plain" }))
      document.querySelector(".drop-zone").dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }))
    })()`)
    const fileId = (await page.getByRole("region", { name: "Uploads" }).locator("code.file-id").textContent()) ?? ""
    await page.getByLabel("File id").fill(fileId)
    await page.getByRole("button", { name: "Show metadata" }).click()
    await page.getByRole("region", { name: "Look up a file" }).getByText("pinned.txt").waitFor()
    await check(page, "pinned-files")
    await goTo(page, "Webhooks", "Webhook endpoints")
    await page.getByText("Not available with this key.").waitFor()
    await check(page, "pinned-webhooks")
    await goTo(page, "Trigger events", "Trigger event history")
    await page.getByText("Not available with this key.").waitFor()
    await check(page, "pinned-trigger-events")
    await goTo(page, "Executions", "Executions")
    await page.getByText(/No executions match|exe_/).first().waitFor()
    await check(page, "pinned-executions")
    // Nothing the key may not use was asked for: no 403 reached the page.
    expect(watched.requests.filter((request) => /\/v1\/(webhooks|trigger-events)|\/v1\/files\?/.test(request))).toEqual([])
    await expectNoLeak(page, watched, PINNED_KEY)
    await page.close()
  }, 60_000)

  it("shows the subscription views: the catalog's triggers and a filter form that follows the trigger", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, KEY)
    await goTo(page, "Subscriptions", "Trigger subscriptions")
    const triggers = await page.getByLabel("Trigger", { exact: true }).locator("option").allTextContents()
    expect(triggers).toEqual(expect.arrayContaining(["demo.event (push)", "github.issue_opened (polling)"]))
    // The filter form follows the trigger's filter schema.
    await page.getByLabel("type (optional)").waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("github.issue_opened")
    await page.getByLabel("owner (required)").waitFor()
    await page.getByLabel("labels (optional)").waitFor()
    await page.getByLabel("Poll interval in seconds (optional)").waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    // Both lists load from the service: empty so far, no error.
    await page.getByText("No trigger subscriptions yet.").waitFor()
    await check(page, "subscriptions")
    await goTo(page, "Trigger events", "Trigger event history")
    await page.getByText("No trigger events match.").waitFor()
    await check(page, "trigger-events")
    await page.close()
  }, 60_000)

  // The time to interactive (budget 1 s) is measured by `npm run bench:dashboard`, not asserted
  // here: a timing in a test fails on a loaded machine (9.9 s once, under a full CI run beside
  // other work), and proves nothing about the code. What is asserted is what cannot drift: the
  // bytes, their encoding and cache headers, and that the page becomes interactive at all.
  it("meets its byte budget: under 300 KB of compressed JS and CSS, and becomes interactive", async () => {
    const files = await servedBytes(service.baseUrl)
    const assets = files.filter((file) => /\.(js|css)$/.test(file.path))
    expect(assets.map((file) => file.encoding)).toEqual(["br", "br"])
    expect(assets.every((file) => file.cacheControl === "public, max-age=31536000, immutable")).toBe(true)
    expect(files[0]?.cacheControl).toBe("no-cache")
    expect(assets.reduce((sum, file) => sum + file.bytes, 0)).toBeLessThan(BUDGET_BYTES)
    expect((await loadOnce(h.browser.context, service.baseUrl, true)).interactiveMs).toBeGreaterThan(0)
  }, 60_000)

  it("creates a demo.event subscription, ingests an event, sees it delivered, rotates and deletes", async () => {
    receiver.respond = () => ({ status: 200 })
    const endpoint = await api.webhooks.create({ url: receiver.url("/triggers"), events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page, KEY)
    await goTo(page, "Subscriptions", "Trigger subscriptions")
    await page.getByText("No trigger subscriptions yet.").waitFor()
    await page.getByLabel("Trigger", { exact: true }).selectOption("demo.event")
    await page.getByLabel("User id").fill("user_1")
    await page.getByRole("checkbox", { name: new RegExp(endpoint.endpointId) }).check()
    await page.getByLabel("type (optional)").fill("order.created")
    await page.getByRole("button", { name: "Create subscription" }).click()
    const ingestField = page.getByLabel("Ingest URL", { exact: true })
    await ingestField.waitFor()
    const ingestUrl = await ingestField.inputValue()
    expect(ingestUrl).toMatch(/\/v1\/ingest\/trgsub_[^/]+\/trgsec_/)
    await page.getByRole("button", { name: "Copy ingest URL", exact: true }).click()
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(ingestUrl)
    await check(page, "subscription-created")
    await page.getByRole("button", { name: "I have stored it" }).click()
    const subscriptionId = subscriptionIdOf(ingestUrl)
    const row = page.locator(`tr[data-subscription-id="${subscriptionId}"]`)
    await row.waitFor()
    expect(await row.textContent()).toContain("{\"type\":\"order.created\"}")
    expect(await page.content()).not.toContain(ingestUrl)

    // The provider's push, to this service's port (SERVICE_BASE_URL names another one here).
    const ingest = (target: string, eventId: string) =>
      fetch(url(new URL(target).pathname), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "event_callback", event_id: eventId, event_time: Math.floor(Date.now() / 1000), event: { type: "order.created", id: eventId } })
      })
    expect((await ingest(ingestUrl, "Ev_dashboard_1")).status).toBe(202)

    // History, filtered to this subscription from its row; polled until delivered.
    await row.getByRole("link", { name: "Events" }).click()
    await page.getByRole("heading", { level: 1, name: "Trigger event history" }).waitFor()
    expect(await page.getByLabel("Subscription id").inputValue()).toBe(subscriptionId)
    const eventRow = page.locator("tr[data-arrival-id]").first()
    await eventRow.locator(".badge-succeeded").waitFor({ timeout: 20_000 })
    expect(await eventRow.textContent()).toContain(endpoint.endpointId)
    expect(await eventRow.textContent()).toContain("accepted")
    await eventually(() => receiver.received.find((request) => request.path === "/triggers"), 10_000, "the trigger delivery")
    await check(page, "trigger-events-delivered")

    // Rotate: a new URL, shown once; the old one stops at once. Then delete.
    await goTo(page, "Subscriptions", "Trigger subscriptions")
    await row.getByRole("button", { name: `Rotate ingest URL of ${subscriptionId}` }).click()
    await row.getByRole("button", { name: `Confirm rotating the ingest URL of ${subscriptionId}` }).click()
    const rotated = await page.getByLabel("Ingest URL", { exact: true }).inputValue()
    expect(rotated).not.toBe(ingestUrl)
    expect((await ingest(ingestUrl, "Ev_dashboard_2")).status).toBe(404)
    expect((await ingest(rotated, "Ev_dashboard_3")).status).toBe(202)
    await check(page, "subscription-rotated")
    await page.getByRole("button", { name: "I have stored it" }).click()
    await row.getByRole("button", { name: `Delete ${subscriptionId}` }).click()
    await row.getByRole("button", { name: `Confirm deleting ${subscriptionId}` }).click()
    await page.getByText("No trigger subscriptions yet.").waitFor()
    expect((await ingest(rotated, "Ev_dashboard_4")).status).toBe(404)
    await expectNoLeak(page, watched, KEY)
    await page.close()
  }, 120_000)

  it("fits a 375 px screen, copies without the Clipboard API, and confirms a polling subscription", async () => {
    // Enough of everything that each list has rows with long ids.
    await api.files.create({ name: "narrow.txt", content: new TextEncoder().encode("narrow") })
    const endpoint = await api.webhooks.create({ url: receiver.url("/narrow"), events: ["trigger.*"] })
    const pushed = await api.subscriptions.create({ trigger: "demo.event", userId: "user_narrow", webhookEndpointIds: [endpoint.endpointId] })
    const ingested = await fetch(url(new URL(pushed.ingestUrl ?? "").pathname), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "event_callback", event_id: "Ev_narrow", event_time: Math.floor(Date.now() / 1000), event: { type: "narrow" } })
    })
    expect(ingested.status).toBe(202)
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: "user_narrow" })
    const connection = await service.fetch("/v1/connections", {
      method: "POST",
      json: { userId: "user_narrow", toolkit: "github", authClass: "bearer", credentials: { token: "gh-narrow" }, scopes: ["issues:read"] }
    })
    expect(connection.status).toBe(201)
    const connectionId = String(((await connection.json()) as { connectionId: string }).connectionId)
    const page = await h.browser.context.newPage()
    // A plain-HTTP page on another machine's address has no Clipboard API: the same, here.
    await page.addInitScript(`
      Object.defineProperty(Navigator.prototype, "clipboard", { get: () => undefined })
      document.addEventListener("copy", () => { window.__copied = String(getSelection()) })
    `)
    await page.setViewportSize({ width: 375, height: 740 })
    await signIn(page, KEY)
    const fits = () => page.evaluate<boolean>(`document.documentElement.scrollWidth <= document.documentElement.clientWidth`)
    for (const [label, heading] of [["Files", "Staged files"], ["Webhooks", "Webhook endpoints"], ["Subscriptions", "Trigger subscriptions"], ["Trigger events", "Trigger event history"], ["Executions", "Executions"]] as const) {
      await goTo(page, label, heading)
      await page.locator("table tbody tr").first().waitFor()
      expect(await fits(), `${label} at 375 px`).toBe(true)
    }
    await goTo(page, "Webhooks", "Webhook endpoints")
    await page.getByLabel("HTTPS URL").fill(receiver.url("/narrow-2"))
    await page.getByRole("button", { name: "Create endpoint" }).click()
    const secret = await page.getByLabel("Signing secret", { exact: true }).inputValue()
    await page.getByRole("button", { name: "Copy signing secret" }).click()
    await page.getByText("Copied to the clipboard.").waitFor()
    expect(await page.evaluate("window.__copied")).toBe(secret)
    expect(await fits()).toBe(true)
    await screenshot(page, "narrow-webhook-created")
    await page.getByRole("button", { name: "I have stored it" }).click()

    // A polling subscription has no ingest URL: the page still says it was made.
    await goTo(page, "Subscriptions", "Trigger subscriptions")
    await createPollingSubscription(page, { userId: "user_narrow", connectionId, endpointId: endpoint.endpointId })
    expect(await page.getByLabel("Ingest URL", { exact: true }).count()).toBe(0)

    // A file over the cap is refused by its request body's size (413): said in file terms. The
    // answer is the service's own, served here without sending 25 MiB.
    await page.route("**/v1/files", (route) =>
      route.request().method() === "POST"
        ? route.fulfill({
          status: 413,
          contentType: "application/json",
          body: JSON.stringify({ error: { code: "invalid_input", message: "The request body exceeds 34968920 bytes.", retryable: false }, requestId: "req_test" })
        })
        : route.continue())
    await goTo(page, "Files", "Staged files")
    await page.getByLabel("Files to upload").setInputFiles({ name: "big.bin", mimeType: "application/octet-stream", buffer: Buffer.alloc(2048) })
    await page.getByText(/^The service refused big\.bin, 2 KiB \(2,048 bytes\), as too large .*It said: The request body exceeds 34968920 bytes\.$/).waitFor()
    await page.close()
  }, 60_000)
})
