/**
 * A list's pager at 1280 x 800, in headless Chromium against the real service: Enter on "Next
 * page" (or "Previous page"), scrolled down to below a page of 20 rows, keeps the keyboard focus
 * on the button and the button on the screen (WCAG 2.4.11, focus not obscured), while the next
 * page loads and once it is shown. The rows shown stay, marked busy, until the next page's arrive:
 * dropping them shortened the page, the browser scrolled to its top, and the focused button ended
 * up some 860 px below the screen when the new rows came.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { focused, settled, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

/** Where the focused element is drawn, and whether all of it is inside the screen. */
const focusInView = (page: Page) =>
  page.evaluate(`(() => {
    const r = document.activeElement.getBoundingClientRect()
    return { top: Math.round(r.top), bottom: Math.round(r.bottom), height: window.innerHeight, scrollY: window.scrollY,
      inView: r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth }
  })()`) as Promise<{ readonly top: number; readonly bottom: number; readonly height: number; readonly scrollY: number; readonly inView: boolean }>

/**
 * Holds each answer to a list request that follows a cursor for `ms`, so the page is seen while
 * the next one loads.
 */
const slowPages = (page: Page, path: string, ms: number) =>
  page.route(
    (address) => address.pathname === path && address.searchParams.has("cursor"),
    async (route) => {
      await new Promise((resolve) => setTimeout(resolve, ms))
      await route.continue()
    }
  )

/**
 * Scrolls to the list's pager (below a first screen, when `scrolled`) and presses Enter on
 * `button`: the focus stays on the button, inside the screen, while the page loads and after.
 */
const pressPager = async (page: Page, region: string, button: "Next page" | "Previous page" | "First page", expectPage: number, scrolled = true) => {
  const list = page.getByRole("region", { name: region, exact: true })
  const pager = list.getByRole("navigation", { name: /pages$/ })
  const target = pager.getByRole("button", { name: button })
  await target.focus()
  await target.scrollIntoViewIfNeeded()
  const before = await focusInView(page)
  expect(before.inView, `${region}: before ${JSON.stringify(before)}`).toBe(true)
  if (scrolled) expect(before.scrollY, `${region}: the pager is below a first screen`).toBeGreaterThan(0)
  await page.keyboard.press("Enter")
  // While the next page loads.
  await pager.getByText(`Page ${expectPage}`, { exact: true }).waitFor()
  expect(await focused(page), `${region}: loading`).toBe(`BUTTON:${button}`)
  const loading = await focusInView(page)
  expect(loading.inView, `${region}: loading ${JSON.stringify(loading)}`).toBe(true)
  // Once it is shown.
  await settled(page)
  expect(await list.locator("tbody tr, ol.deliveries > li").count(), region).toBeGreaterThan(0)
  expect(await focused(page), `${region}: shown`).toBe(`BUTTON:${button}`)
  const shown = await focusInView(page)
  expect(shown.inView, `${region}: shown ${JSON.stringify(shown)}`).toBe(true)
}

/** A page at 1280x800 showing `path` with its first 20 rows, whose next pages of `apiPath` come slowly. */
const openList = async (path: string, apiPath: string) => {
  const page = await h.browser.context.newPage()
  await page.setViewportSize({ width: 1280, height: 800 })
  await signInAt(page, url(path))
  await page.locator("tbody tr").nth(19).waitFor()
  await settled(page)
  await slowPages(page, apiPath, 600)
  return page
}

describe("a list's pager", () => {
  it("keeps the focused Next, Previous and First page buttons on the screen in the executions list", async () => {
    for (let i = 0; i < 45; i++) await api.executions.execute({ tool: "demo.echo", input: { i }, userId: "user_pager" })
    const page = await openList("/dashboard/executions?userId=user_pager", "/v1/executions")
    await pressPager(page, "Executions", "Next page", 2)
    await pressPager(page, "Executions", "Next page", 3)
    await pressPager(page, "Executions", "Previous page", 2, false)
    // From the last page (5 rows, no next one) to the first: the pager stays while it loads.
    await pressPager(page, "Executions", "Next page", 3)
    await pressPager(page, "Executions", "First page", 1, false)
    await page.close()
  })

  it("keeps the focused Next page button on the screen in the files list", async () => {
    for (let i = 0; i < 45; i++) await api.files.create({ name: `pager-${i}.txt`, content: new TextEncoder().encode(String(i)) })
    const page = await openList("/dashboard/files", "/v1/files")
    await pressPager(page, "Files in the project", "Next page", 2)
    await page.close()
  })
})
