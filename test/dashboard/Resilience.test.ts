/**
 * The dashboard when the service answers badly for a while, in headless Chromium against the
 * real service, with faults injected into the page's own requests (playwright's routing): a
 * failed poll does not stop the refreshing; a request that gets no answer says the service could
 * not be reached, with no service error code; a key refused mid-session goes back to sign-in; a
 * service that cannot answer on a reload keeps the key and offers to try again; a file's
 * metadata is read afresh; a blank file id is refused in the page. And the keyboard focus stays
 * on the page after in-place actions (a delete or a rotate asked and kept, a secret put away, a
 * page turned, signing in), where it fell to the document's body before; a rotate sends nothing
 * until it is confirmed.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { envelope, settled, watch, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = (page: Page) => signInAt(page, url("/dashboard"))

const storedKeys = (page: Page) => page.evaluate("Object.values(sessionStorage)") as Promise<ReadonlyArray<string>>

describe("the dashboard when the service falters", () => {
  it("keeps refreshing a running execution after a poll fails with a retryable error", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    const started = await api.executions.execute({ tool: "demo.sleep", userId: "user_r", input: { ms: 3_000 }, mode: "async" })
    const id = started.executionId
    let failures = 0
    // The second read of the record fails: 503, retryable, as while the store is away.
    let reads = 0
    await page.route(`**/v1/executions/${id}`, (route) => {
      reads++
      if (reads === 2) {
        failures++
        return envelope(503, "provider_unavailable", "The service's store is unavailable; retry shortly.", true)(route)
      }
      return route.continue()
    })
    await page.goto(url(`/dashboard/executions/${id}`))
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await expect.poll(() => failures, { timeout: 10_000 }).toBe(1)
    await expect.poll(() => page.locator("main").textContent(), { timeout: 15_000 }).toContain("succeeded")
    await page.close()
  })

  it("says a poll that got no answer could not reach the service, with no service error code, and keeps refreshing", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    const started = await api.executions.execute({ tool: "demo.sleep", userId: "user_r", input: { ms: 3_000 }, mode: "async" })
    const id = started.executionId
    // The second read of the record gets no answer at all: fetch throws ("Failed to fetch").
    let reads = 0
    let aborted = 0
    await page.route(`**/v1/executions/${id}`, (route) => {
      reads++
      if (reads === 2) {
        aborted++
        return route.abort("connectionrefused")
      }
      return route.continue()
    })
    await page.goto(url(`/dashboard/executions/${id}`))
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await expect.poll(() => aborted, { timeout: 10_000 }).toBe(1)
    const alert = page.getByRole("main").getByRole("alert").first()
    await expect.poll(() => alert.textContent(), { timeout: 5_000 }).toContain("Could not reach the service")
    const said = (await alert.textContent()) ?? ""
    expect(said).not.toContain("provider_unavailable")
    expect(said).not.toContain("HTTP")
    expect(await alert.locator(".error-code").count()).toBe(0)
    // The refreshing goes on: the record reaches its end, and the notice goes.
    await expect.poll(() => page.locator("main").textContent(), { timeout: 15_000 }).toContain("succeeded")
    await expect.poll(() => page.getByRole("main").getByRole("alert").count(), { timeout: 10_000 }).toBe(0)
    await page.close()
  })

  // An outside audit: a read that never got an answer (a proxy that swallows requests) left the
  // view waiting for ever, Refresh and the pager disabled and the polling stopped.
  it("gives up a read that gets no answer within 15 s, says the service did not answer, and keeps refreshing", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    const started = await api.executions.execute({ tool: "demo.sleep", userId: "user_r", input: { ms: 20_000 }, mode: "async" })
    const id = started.executionId
    // The second read of the record is swallowed: no answer, no error.
    let reads = 0
    let swallowed = 0
    await page.route(`**/v1/executions/${id}`, (route) => {
      reads++
      if (reads === 2) {
        swallowed++
        return new Promise<void>(() => {})
      }
      return route.continue()
    })
    await page.goto(url(`/dashboard/executions/${id}`))
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await expect.poll(() => swallowed, { timeout: 10_000 }).toBe(1)
    const alert = page.getByRole("main").getByRole("alert").first()
    await expect.poll(() => alert.textContent(), { timeout: 20_000 }).toContain("did not answer within 15 s")
    expect(await alert.locator(".error-code").count()).toBe(0)
    // The refreshing goes on after it: the record is read again.
    await expect.poll(() => reads, { timeout: 10_000 }).toBeGreaterThan(2)
    await expect.poll(() => page.locator("main").textContent(), { timeout: 20_000 }).toContain("succeeded")
    await page.close()
  }, 60_000)

  // An outside audit: a gateway's own 502 page read "Error provider_unavailable (HTTP 502)", the
  // code the service uses for a tool's provider, guessed by the client library from the status.
  it("shows no service code for an error page that is not the service's (a proxy's 502), and says where it came from", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.route("**/v1/files?*", (route) => route.fulfill({ status: 502, contentType: "text/html", body: "<html><body>502 Bad Gateway</body></html>" }))
    await page.route("**/v1/files", (route) => route.fulfill({ status: 502, contentType: "text/html", body: "<html><body>502 Bad Gateway</body></html>" }))
    await page.goto(url("/dashboard/files"))
    const alert = page.getByRole("main").getByRole("alert").first()
    await expect.poll(() => alert.textContent(), { timeout: 10_000 }).toContain("No answer from the service (HTTP 502)")
    expect(await alert.textContent()).toContain("a proxy or gateway")
    expect(await alert.textContent()).not.toContain("provider_unavailable")
    expect(await alert.locator(".error-code").count()).toBe(0)
    await page.close()
  })

  it("says so too, keeping the key, when the check on a reload gets no answer; Try again signs in", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.route("**/v1/me", (route) => route.abort("connectionrefused"))
    await page.reload()
    const alert = page.getByRole("alert")
    await expect.poll(() => alert.textContent(), { timeout: 10_000 }).toContain("Could not reach the service")
    expect(await alert.textContent()).not.toContain("provider_unavailable")
    expect(await alert.locator(".error-code").count()).toBe(0)
    expect(await storedKeys(page)).toEqual([KEY])
    await page.unroute("**/v1/me")
    await page.getByRole("button", { name: "Try again" }).click()
    await page.getByRole("navigation", { name: "Views" }).waitFor({ timeout: 10_000 })
    await page.close()
  })

  it("goes back to sign-in, and forgets the key, when the key is refused mid-session", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    // The landing view's first loads finish with the key good: only the navigation is refused.
    await settled(page)
    await page.route("**/v1/**", envelope(401, "auth_expired", "The API key is invalid or revoked.", false))
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    await page.getByLabel("API key").waitFor({ timeout: 10_000 })
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/auth_expired/)
    expect(await storedKeys(page)).toEqual([])
    await page.close()
  })

  it("titles the page Sign in again after Sign out and after a key refused mid-session", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    await expect.poll(() => page.title()).toBe("Executions · Service dashboard")
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").waitFor()
    await expect.poll(() => page.title()).toBe("Sign in · Service dashboard")
    await page.getByLabel("API key").fill(KEY)
    await page.getByRole("button", { name: "Sign in" }).click()
    // Sign out left the view's address: the dashboard's first view.
    await expect.poll(() => page.title()).toBe("Staged files · Service dashboard")
    await settled(page)
    await page.route("**/v1/**", envelope(401, "auth_expired", "The API key is invalid or revoked.", false))
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    await page.getByLabel("API key").waitFor({ timeout: 10_000 })
    await expect.poll(() => page.title()).toBe("Sign in · Service dashboard")
    await page.close()
  })

  it("shows the service's code and message when the code is one the client library does not know", async () => {
    const page = await h.browser.context.newPage()
    await page.route("**/v1/files?*", envelope(500, "internal", "Something broke on the server.", false))
    await signIn(page)
    const alert = page.getByRole("region", { name: "Files in the project" }).getByRole("alert")
    await expect.poll(() => alert.locator(".error-code").textContent(), { timeout: 10_000 }).toBe("internal")
    expect(await alert.locator(".error-message").textContent()).toBe("Something broke on the server.")
    expect(await alert.textContent()).toContain("HTTP 500")
    await page.close()
  })

  it("says how long to wait when the service rate-limits an action (429 with Retry-After)", async () => {
    const page = await h.browser.context.newPage()
    await page.route("**/v1/webhooks", (route) =>
      route.request().method() === "POST"
        ? route.fulfill({
          status: 429,
          contentType: "application/json",
          headers: { "retry-after": "37", "request-id": "req_00000000000000000000000000000000" },
          body: JSON.stringify({ error: { code: "rate_limited", message: "Too many requests.", retryable: true, retryAfter: 37 }, requestId: "req_00000000000000000000000000000000" })
        })
        : route.continue())
    await signIn(page)
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Webhooks" }).click()
    await page.getByLabel("HTTPS URL").fill("https://example.com/limited")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    const alert = page.getByRole("region", { name: "Add an endpoint" }).getByRole("alert")
    await expect.poll(() => alert.locator(".error-code").textContent(), { timeout: 10_000 }).toBe("rate_limited")
    expect(await alert.textContent()).toContain("try again in 37 s")
    await page.close()
  })

  it("says so while the client waits to retry a rate-limited list, and stops saying so once it has loaded", async () => {
    const page = await h.browser.context.newPage()
    let limited = 0
    await page.route("**/v1/executions?*", (route) => {
      if (limited++ > 0) return route.continue()
      return route.fulfill({
        status: 429,
        contentType: "application/json",
        headers: { "retry-after": "3", "request-id": "req_00000000000000000000000000000000" },
        body: JSON.stringify({ error: { code: "rate_limited", message: "Too many requests.", retryable: true, retryAfter: 3 }, requestId: "req_00000000000000000000000000000000" })
      })
    })
    await signIn(page)
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    const said = () => page.evaluate(`[...document.querySelectorAll("[role=status]")].map((e) => e.textContent).join(" | ")`) as Promise<string>
    await expect.poll(said, { timeout: 5_000 }).toMatch(/Rate limited; retrying in [1-3] s/)
    await expect.poll(() => limited, { timeout: 10_000 }).toBe(2)
    await expect.poll(() => page.evaluate(`document.querySelector("[aria-busy=true], .loading") === null`), { timeout: 10_000 }).toBe(true)
    await expect.poll(said).not.toMatch(/Rate limited/)
    await page.close()
  })

  it("keeps the key when the service cannot answer on a reload, and signs in again on Try again", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.route("**/v1/me", envelope(503, "provider_unavailable", "The service's store is unavailable; retry shortly.", true))
    await page.reload()
    await expect.poll(() => page.getByRole("alert").textContent(), { timeout: 10_000 }).toMatch(/provider_unavailable/)
    expect(await storedKeys(page)).toEqual([KEY])
    expect(await page.getByLabel("API key").count()).toBe(0)
    await page.unroute("**/v1/me")
    await page.getByRole("button", { name: "Try again" }).click()
    await page.getByRole("navigation", { name: "Views" }).waitFor({ timeout: 10_000 })
    await page.close()
  })

  it("reads a listed file's metadata afresh: one gone since the list shows not_found", async () => {
    const staged = await api.files.create({ name: "fresh.txt", content: new TextEncoder().encode("x") })
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.getByRole("region", { name: "Files in the project" }).getByText("fresh.txt").waitFor()
    // The file expires (or is cleaned up) after the list was loaded.
    await page.route(`**/v1/files/${staged.fileId}`, envelope(404, "not_found", "No such file.", false))
    await page.getByRole("button", { name: "Metadata of fresh.txt" }).click()
    await expect.poll(() => page.getByRole("region", { name: "Files in the project" }).getByRole("alert").textContent(), { timeout: 10_000 }).toMatch(/not_found/)
    await page.close()
  })

  it("refuses a blank file id in the page, without a request", async () => {
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page)
    const before = watched.requests.length
    await page.getByLabel("File id").fill("   ")
    await page.getByRole("button", { name: "Show metadata" }).click()
    await expect.poll(() => page.getByRole("region", { name: "Look up a file" }).textContent()).toMatch(/Enter a file id/)
    // No metadata request (`/v1/files/<id>`); the list itself may load or poll meanwhile.
    expect(watched.requests.slice(before).filter((request) => new URL(request).pathname.startsWith("/v1/files/"))).toEqual([])
    await page.close()
  })
})

/** What has the focus: a description of the element, `body` when nothing on the page has it. */
const focused = (page: Page) =>
  page.evaluate(`(() => { const e = document.activeElement; return e === null || e === document.body ? "body" : e.tagName + ":" + (e.textContent ?? "").trim() })()`) as Promise<string>

describe("the keyboard focus after in-place actions", () => {
  it("lands on the view's heading after signing in", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page)
    await expect.poll(() => focused(page)).toBe("H1:Staged files")
    await page.close()
  })

  it("moves to the confirmation when a delete is asked, back when it is kept, and stays on the page when Escape keeps it", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/focus", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.goto(url(`/dashboard/webhooks/${endpoint.endpointId}`))
    await page.getByRole("button", { name: "I have stored it" }).or(page.getByRole("button", { name: "Delete endpoint" })).first().waitFor()
    await page.getByRole("button", { name: "Delete endpoint" }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Confirm delete")
    await page.getByRole("button", { name: "Keep it" }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Delete endpoint")
    await page.getByRole("button", { name: "Delete endpoint" }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Confirm delete")
    await page.keyboard.press("Escape")
    await expect.poll(() => focused(page)).toBe("BUTTON:Delete endpoint")
    await page.close()
  })

  it("asks before rotating an endpoint's signing secret: focus on the confirmation, Escape keeps it, nothing is sent until confirmed", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/rotate-focus", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page)
    await page.goto(url(`/dashboard/webhooks/${endpoint.endpointId}`))
    const rotate = page.getByRole("button", { name: "Rotate secret" })
    await rotate.click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Confirm rotate")
    await page.getByText("The current secret stops signing at once, queued retries included.").waitFor()
    await page.keyboard.press("Escape")
    await expect.poll(() => focused(page)).toBe("BUTTON:Rotate secret")
    await rotate.click()
    await page.getByRole("button", { name: "Keep the current secret" }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Rotate secret")
    // Asked twice and kept twice: the secret is the one the endpoint was created with.
    expect(watched.requests.filter((request) => request.includes("/rotate-secret"))).toEqual([])
    expect((await api.webhooks.get(endpoint.endpointId)).secretPrefix).toBe(endpoint.secretPrefix)
    await rotate.click()
    await page.getByRole("button", { name: "Confirm rotate" }).click()
    const rotated = await page.getByLabel("New signing secret", { exact: true }).inputValue()
    expect(rotated.slice(0, 10)).toBe((await api.webhooks.get(endpoint.endpointId)).secretPrefix)
    expect(rotated.slice(0, 10)).not.toBe(endpoint.secretPrefix)
    // The new secret, shown once, has the focus.
    await expect.poll(() => focused(page)).toBe("H3:Secret rotated")
    await page.close()
  })

  it("asks before rotating a push subscription's ingest URL, and the old URL stops only once confirmed", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/rotate-ingest", events: ["trigger.*"] })
    const created = await api.subscriptions.create({ trigger: "demo.event", userId: "user_rotate", webhookEndpointIds: [endpoint.endpointId] })
    const id = created.subscriptionId
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signIn(page)
    await page.goto(url("/dashboard/subscriptions"))
    const row = page.locator(`tr[data-subscription-id="${id}"]`)
    await row.getByRole("button", { name: `Rotate ingest URL of ${id}` }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Confirm rotate")
    await row.getByText("The current ingest URL stops working at once.").waitFor()
    await row.getByRole("button", { name: "Keep the URL" }).click()
    await expect.poll(() => focused(page)).toBe("BUTTON:Rotate")
    expect(watched.requests.filter((request) => request.includes("/rotate-secret"))).toEqual([])
    await row.getByRole("button", { name: `Rotate ingest URL of ${id}` }).click()
    await row.getByRole("button", { name: `Confirm rotating the ingest URL of ${id}` }).click()
    const rotated = await page.getByLabel("Ingest URL", { exact: true }).inputValue()
    expect(rotated).toMatch(new RegExp(`/v1/ingest/${id}/`))
    expect(rotated).not.toBe(created.ingestUrl)
    // The old URL is refused now (the provider's push to it gets 404).
    const old = await fetch(url(new URL(created.ingestUrl ?? "").pathname), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(old.status).toBe(404)
    await page.close()
  })

  it("stays on the page when a shown-once secret is put away, and when a page of the list is turned", async () => {
    for (let i = 0; i < 21; i++) await api.files.create({ name: `page-${i}.txt`, content: new TextEncoder().encode("p") })
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    await page.getByLabel("HTTPS URL").fill("https://example.com/secret-focus")
    await page.getByLabel("execution.completed", { exact: false }).first().check()
    await page.getByRole("button", { name: "Create endpoint" }).click()
    await page.getByRole("button", { name: "I have stored it" }).click()
    await expect.poll(() => focused(page)).not.toBe("body")
    await page.getByRole("link", { name: "Files" }).click()
    const next = page.getByRole("region", { name: "Files in the project" }).getByRole("button", { name: "Next page" })
    await next.click()
    await expect.poll(() => page.getByRole("region", { name: "Files in the project" }).textContent()).toContain("Page 2")
    await expect.poll(() => focused(page)).not.toBe("body")
    await page.close()
  })
})
