/**
 * The executions views in headless Chromium against the real service: the list's filters live in
 * the URL (a reload, the back button and a copied link keep them; a value the list cannot use is
 * left out rather than failing the page).
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient } from "../../client/index.ts"
import { ensureDashboard } from "../../dashboard/scripts/build.ts"
import { type InProcessService, KEY, startService } from "../support/Service.ts"
import { type Browser, launch, seriousViolations, watch } from "./Browser.ts"

await ensureDashboard()
const service: InProcessService = await startService({
  SERVICE_RATE_LIMIT_REQUEST_BURST: "10000",
  SERVICE_RATE_LIMIT_REQUESTS_PER_MINUTE: "60000"
})
const api = createClient({ baseUrl: service.baseUrl, apiKey: KEY })
let browser: Browser

beforeAll(async () => {
  browser = await launch()
})
afterAll(async () => {
  await browser?.close()
  await service.close()
})

const url = (path: string) => `${service.baseUrl}${path}`

/** Signs in on whatever dashboard page `path` is: the view it names is kept through sign-in. */
const signIn = async (page: Page, path = "/dashboard/executions", key = KEY) => {
  await page.goto(url(path))
  await page.getByLabel("API key").fill(key)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("navigation", { name: "Views" }).waitFor()
}

const list = (page: Page) => page.getByRole("region", { name: "Executions" })

/** The list as (tool, status) pairs once it has loaded. */
const rows = async (page: Page) => {
  await expect.poll(() => page.evaluate(`document.querySelector("[aria-busy=true], .loading") === null`), { timeout: 10_000 }).toBe(true)
  const cells = await list(page).locator("tbody tr").evaluateAll((trs) =>
    trs.map((tr) => `${tr.children[1]?.textContent ?? ""} ${tr.children[2]?.textContent ?? ""}`)
  )
  return [...new Set(cells)].toSorted()
}

const chosen = async (page: Page) => [await page.getByLabel("Status").inputValue(), await page.getByLabel("Tool").inputValue()]

describe("the executions list's filters", () => {
  it("are kept in the URL: a reload, the back button and a copied link keep them; bad values are left out", async () => {
    await api.executions.execute({ tool: "demo.echo", input: { n: 1 }, userId: "user_filters" })
    await api.executions.execute({ tool: "demo.echo", input: { n: 2 }, userId: "user_filters" })
    const failed = await api.executions.execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "user_filters" })
    expect(failed.status).toBe("failed")
    const page = await browser.context.newPage()
    const watched = watch(page)
    await signIn(page)
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(await rows(page)).toEqual(["demo.echo succeeded", "demo.fail failed"])

    await page.getByLabel("Status").selectOption("succeeded")
    await page.getByLabel("Tool").selectOption("demo.echo")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("?status=succeeded&tool=demo.echo")
    expect(await rows(page)).toEqual(["demo.echo succeeded"])

    // A reload keeps them, in the list and in the form.
    await page.reload()
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(await chosen(page)).toEqual(["succeeded", "demo.echo"])
    expect(await rows(page)).toEqual(["demo.echo succeeded"])

    // Other filters, then back: the earlier ones again.
    await page.getByLabel("Status").selectOption("failed")
    await page.getByLabel("Tool").selectOption("")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("?status=failed")
    expect(await rows(page)).toEqual(["demo.fail failed"])
    await page.goBack()
    await expect.poll(() => new URL(page.url()).search).toBe("?status=succeeded&tool=demo.echo")
    await expect.poll(() => chosen(page)).toEqual(["succeeded", "demo.echo"])
    expect(await rows(page)).toEqual(["demo.echo succeeded"])
    await page.goForward()
    await expect.poll(() => chosen(page)).toEqual(["failed", ""])
    expect(await rows(page)).toEqual(["demo.fail failed"])
    expect(await seriousViolations(page)).toEqual([])

    // A copied link, opened in another tab (which signs in first).
    const link = page.url()
    const other = await browser.context.newPage()
    await signIn(other, new URL(link).pathname + new URL(link).search)
    await other.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(await chosen(other)).toEqual(["failed", ""])
    expect(await rows(other)).toEqual(["demo.fail failed"])

    // Values the list cannot use are left out: the unfiltered list, no error.
    const before = watched.requests.length
    await page.goto(url("/dashboard/executions?status=bogus&tool=no.such_tool&userId=not%20a%20user"))
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(await rows(page)).toEqual(["demo.echo succeeded", "demo.fail failed"])
    expect(await chosen(page)).toEqual(["", ""])
    expect(await page.getByRole("alert").count()).toBe(0)
    const listed = watched.requests.slice(before).filter((request) => request.includes("/v1/executions?"))
    expect(listed.length).toBeGreaterThan(0)
    expect(listed.filter((request) => /[?&](status|tool|userId)=/.test(request))).toEqual([])
    expect(watched.errors).toEqual([])
    await other.close()
    await page.close()
  })
})
