/**
 * What the dashboard shows agrees with what it does, in headless Chromium against the real
 * service: a filter value from the URL that the list cannot use is left out of the form, the
 * request and the URL alike (a pinned key's user id too).
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY, PINNED_KEY } from "../support/Service.ts"
import { watch } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = async (page: Page, path: string, key = KEY) => {
  await page.goto(url(path))
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("navigation", { name: "Views" }).waitFor()
}

const settled = (page: Page) =>
  expect.poll(() => page.evaluate(`document.querySelector("[aria-busy=true], .loading") === null`), { timeout: 10_000 }).toBe(true)

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
