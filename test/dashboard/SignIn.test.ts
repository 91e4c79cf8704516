/**
 * The sign-in form in headless Chromium against the real service: a refusal's error goes once
 * the key field changes, and a key cleared, whose press the browser blocks, leaves no old error.
 */
import { describe, expect, it } from "vitest"
import { KEY } from "../support/Service.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { url } = h

describe("the sign-in form's error", () => {
  it("goes once the key changes, and stays gone when the cleared key's press is blocked", async () => {
    const page = await h.browser.context.newPage()
    await page.goto(url("/dashboard"))
    const field = page.getByLabel("API key")
    const signIn = page.getByRole("button", { name: "Sign in" })
    await field.fill("sk_not_a_key")
    await signIn.click()
    const alert = page.getByRole("main").getByRole("alert")
    await alert.waitFor({ timeout: 10_000 })
    await field.fill("")
    await expect.poll(() => alert.count()).toBe(0)
    await signIn.click()
    expect(await alert.count()).toBe(0)
    // The right key still signs in.
    await field.fill(KEY)
    await signIn.click()
    await page.getByRole("navigation", { name: "Views" }).waitFor()
    await page.close()
  })
})
