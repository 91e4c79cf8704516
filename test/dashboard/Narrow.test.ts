/**
 * The dashboard on a 375 px screen, in headless Chromium against the real service: a long valid
 * id does not make the page scroll sideways.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const LONG_USER = "user_with_a_quite_long_identifier_that_is_sixty_four_chars_xxxxx"

const signIn = async (page: Page, path: string) => {
  await page.goto(url(path))
  await page.getByLabel("API key").fill(KEY)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("navigation", { name: "Views" }).waitFor()
}

const fits = (page: Page) => page.evaluate<boolean>(`document.documentElement.scrollWidth <= document.documentElement.clientWidth`)

describe("the dashboard at 375 px", () => {
  it("keeps an execution record with a 64-character user id inside the screen", async () => {
    expect(LONG_USER).toHaveLength(64)
    const execution = await api.executions.execute({ tool: "demo.echo", input: {}, userId: LONG_USER })
    const page = await h.browser.context.newPage()
    await page.setViewportSize({ width: 375, height: 740 })
    await signIn(page, `/dashboard/executions/${execution.executionId}`)
    await page.getByText(LONG_USER).waitFor()
    expect(await fits(page)).toBe(true)
    await page.close()
  })
})
