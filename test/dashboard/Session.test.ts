/**
 * A new session in the same tab, in headless Chromium against the real service: after Sign out
 * and signing in again (with another project's key, a pinned key, or the same key), a list starts
 * on its first page; the last session's cursors, kept in the history entries' state, are not sent
 * (they were another list's: the service refused them, 422, and the pager said "Page 2"). And a
 * request waiting to be retried (the client library's one retry after a 429) is dropped when the
 * session ends or its view is left: after Sign out no request carries the old key. Sign out takes
 * the address to the sign-in page's own, so the next key does not sign in to the last one's view
 * and filters.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY, OTHER_KEY, PINNED_KEY } from "../support/Service.ts"
import { rateLimited, settled, signIn as signInAt, watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const list = (page: Page) => page.getByRole("region", { name: "Executions", exact: true })

/** The API requests the page sends from now on, each as its path and query with the key it carries. */
const sentFromNow = (page: Page) => {
  const sent: Array<string> = []
  page.on("request", (request) => {
    const address = new URL(request.url())
    if (address.pathname.startsWith("/v1/")) sent.push(`${address.pathname}${address.search} ${request.headers().authorization ?? ""}`)
  })
  return sent
}

/**
 * Signs out from the view shown and signs in again with `key` (on the dashboard's first view: Sign
 * out leaves the last view's address), then opens the executions list; waits for it to load.
 */
const signInAgain = async (page: Page, key: string) => {
  await page.getByRole("button", { name: "Sign out" }).click()
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
  await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
  await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
  await settled(page)
}

/** Turns the executions list to its second page. */
const toPage2 = async (page: Page) => {
  await settled(page)
  await list(page).getByRole("button", { name: "Next page" }).click()
  await list(page).getByText("Page 2").waitFor()
  await settled(page)
}

/** The list is on its first page, with no error. */
const expectFirstPage = async (page: Page, what: string) => {
  expect(await page.getByRole("main").getByRole("alert").count(), what).toBe(0)
  expect(await list(page).textContent(), what).not.toContain("Page 2")
}

describe("Sign out", () => {
  it("goes to the sign-in page's own address, without the last session's view or filters", async () => {
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: "user_0" })
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    await signInAt(page, url("/dashboard/executions?status=succeeded&tool=demo.echo&userId=user_0"), KEY)
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    await settled(page)
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").waitFor()
    await expect.poll(() => page.url()).toBe(url("/dashboard"))
    // The next key starts on the dashboard's first view, with none of the last one's filters.
    const from = watched.requests.length
    await page.getByLabel("API key").fill(OTHER_KEY)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    await settled(page)
    expect(watched.requests.slice(from).filter((request) => request.includes("user_0"))).toEqual([])
    expect(page.url()).not.toContain("user_0")
    await page.close()
  })
})

describe("a new session in the same tab", () => {
  it("starts a list on its first page, and sends none of the last session's cursors", async () => {
    // More than a page for the project's key, and for the key pinned to user_1.
    for (let i = 0; i < 21; i++) await api.executions.execute({ tool: "demo.echo", input: { i }, userId: "user_1" })
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    const cursorsSince = (from: number) => watched.requests.slice(from).filter((request) => request.includes("cursor="))
    await signInAt(page, url("/dashboard/executions"), KEY)
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()

    // Another project's key.
    await toPage2(page)
    let from = watched.requests.length
    await signInAgain(page, OTHER_KEY)
    await expectFirstPage(page, "another project")
    expect(cursorsSince(from)).toEqual([])

    // The same key again.
    await signInAgain(page, KEY)
    await toPage2(page)
    from = watched.requests.length
    await signInAgain(page, KEY)
    await expectFirstPage(page, "the same key")
    expect(await list(page).textContent()).toContain("Page 1")
    expect(cursorsSince(from)).toEqual([])

    // A key pinned to user_1 (its list is user_1's, with more than a page).
    await toPage2(page)
    from = watched.requests.length
    await signInAgain(page, PINNED_KEY)
    await expectFirstPage(page, "a pinned key")
    expect(await list(page).textContent()).toContain("Page 1")
    expect(cursorsSince(from)).toEqual([])

    // Back to an entry the last session left on page 2 (a record opened from it, then Sign out,
    // which put the sign-in page's address in the record's place).
    await signInAgain(page, KEY)
    await toPage2(page)
    const onPage2 = (await list(page).locator("tbody tr a").first().textContent()) ?? ""
    await list(page).getByRole("link", { name: onPage2 }).click()
    await page.getByRole("heading", { level: 2, name: onPage2 }).waitFor()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").fill(OTHER_KEY)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    from = watched.requests.length
    await page.goBack()
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    await settled(page)
    await expectFirstPage(page, "Back to the last session's entry")
    expect(cursorsSince(from)).toEqual([])
    expect(watched.errors).toEqual([])
    await page.close()
  })

  /**
   * A page on the executions list whose first read was refused once (429, retry after 2 s): the
   * client waits to send it again. `refused()` counts the refusals; `sent` the requests from then on.
   */
  const waitingRetry = async () => {
    const page = await h.browser.context.newPage()
    await signInAt(page, url("/dashboard/files"), KEY)
    await settled(page)
    let refused = 0
    await page.route("**/v1/executions?*", (route) => {
      if (refused++ === 0) return rateLimited(2)(route)
      return route.continue()
    })
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    await page.getByText("Rate limited; retrying in 2 s.").waitFor()
    return { page, sent: sentFromNow(page), refused: () => refused }
  }

  it("sends nothing after Sign out, not even a rate-limited list's retry that was waiting", async () => {
    const { page, sent, refused } = await waitingRetry()
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByLabel("API key").waitFor()
    // Past the wait, and a poll's 2 s beyond it.
    await page.waitForTimeout(4_500)
    expect(sent).toEqual([])
    expect(refused()).toBe(1)
    await page.close()
  })

  it("drops a rate-limited list's waiting retry, and says no more of it, when its view is left", async () => {
    const { page, sent, refused } = await waitingRetry()
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    await expect.poll(() => page.getByText(/Rate limited/).count()).toBe(0)
    await page.waitForTimeout(4_500)
    expect(sent.filter((request) => request.startsWith("/v1/executions"))).toEqual([])
    expect(refused()).toBe(1)
    await page.close()
  })
})
