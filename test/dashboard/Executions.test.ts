/**
 * The executions views in headless Chromium against the real service: the list's filters live in
 * the URL (a reload, the back button and a copied link keep them; a value the list cannot use is
 * left out rather than failing the page), and a pending or running execution can be cancelled
 * from its row or its record, by an unpinned key or by a key pinned to its user; a refusal shows
 * the service's code and message; when the execution finishes while its cancel is being
 * confirmed, the focus goes to the record's heading or the row's link, and the page says it
 * finished. A failed record says how long its provider asked to wait.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { KEY, PINNED_KEY } from "../support/Service.ts"
import { focused as focusedIn, seriousViolations, watch, signIn as signInAt } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

/** Signs in on whatever dashboard page `path` is: the view it names is kept through sign-in. */
const signIn = (page: Page, path = "/dashboard/executions", key = KEY) => signInAt(page, url(path), key)

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

const sleeping = (userId: string) => api.executions.execute({ tool: "demo.sleep", input: { ms: 60_000 }, userId, mode: "async" })

describe("the executions list's filters", () => {
  it("are kept in the URL: a reload, the back button and a copied link keep them; bad values are left out", async () => {
    await api.executions.execute({ tool: "demo.echo", input: { n: 1 }, userId: "user_filters" })
    await api.executions.execute({ tool: "demo.echo", input: { n: 2 }, userId: "user_filters" })
    const failed = await api.executions.execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "user_filters" })
    expect(failed.status).toBe("failed")
    const page = await h.browser.context.newPage()
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
    const other = await h.browser.context.newPage()
    await signIn(other, new URL(link).pathname + new URL(link).search)
    await other.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(await chosen(other)).toEqual(["failed", ""])
    expect(await rows(other)).toEqual(["demo.fail failed"])

    // A record opened from the filtered list leads back to it, filters and all.
    await other.getByRole("link", { name: failed.executionId }).click()
    await other.getByRole("heading", { level: 2, name: failed.executionId }).waitFor()
    expect(new URL(other.url()).search).toBe("?status=failed")
    await other.getByRole("link", { name: "← All executions" }).click()
    await other.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    expect(new URL(other.url()).pathname + new URL(other.url()).search).toBe("/dashboard/executions?status=failed")
    await expect.poll(() => chosen(other)).toEqual(["failed", ""])
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

describe("a failed execution's record", () => {
  it("says how long the provider asked to wait when the record's error carries retryAfter", async () => {
    const failed = await api.executions.execute({ tool: "demo.fail", input: { code: "rate_limited", retryAfter: 7 }, userId: "user_3" })
    expect(failed.status).toBe("failed")
    expect(failed.status === "failed" ? failed.error : undefined).toMatchObject({ code: "rate_limited", retryable: true, retryAfter: 7 })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/executions/${failed.executionId}`)
    const error = page.getByRole("region", { name: failed.executionId }).getByRole("alert")
    await error.waitFor({ timeout: 10_000 })
    expect(await error.locator(".error-code").textContent()).toBe("rate_limited")
    expect(await error.textContent()).toContain("The provider asked to wait 7 s before trying again.")
    expect(await error.locator(".retry-after").textContent()).toBe("The provider asked to wait 7 s before trying again.")
    // Not the wording of a refused request: the record's error is not this page's request.
    expect(await error.textContent()).not.toContain("The service asks to wait")
    // A record whose error carries no retryAfter says nothing about waiting.
    const plain = await api.executions.execute({ tool: "demo.fail", input: { code: "provider_error" }, userId: "user_3" })
    await page.goto(url(`/dashboard/executions/${plain.executionId}`))
    const other = page.getByRole("region", { name: plain.executionId }).getByRole("alert")
    await other.waitFor({ timeout: 10_000 })
    expect(await other.locator(".retry-after").count()).toBe(0)
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })
})

describe("the executions list's user filter", () => {
  it("takes a user id pasted with spaces around it, trimmed, as the other id fields do", async () => {
    await api.executions.execute({ tool: "demo.echo", input: {}, userId: "user_trimmed" })
    const page = await h.browser.context.newPage()
    await signIn(page)
    await page.getByRole("heading", { level: 1, name: "Executions" }).waitFor()
    const field = page.getByLabel("User id")
    await field.fill(" user_trimmed ")
    expect(await page.evaluate(`document.getElementById("executions-user").validationMessage`)).toBe("")
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => new URL(page.url()).search).toBe("?userId=user_trimmed")
    expect(await rows(page)).toEqual(["demo.echo succeeded"])
    expect(await list(page).locator("tbody tr td:nth-child(4)").allTextContents()).toEqual(["user_trimmed"])
    expect(await page.getByLabel("User id").inputValue()).toBe("user_trimmed")
    // Spaces inside an id are still refused by the field.
    await page.getByLabel("User id").fill("user trimmed")
    expect(await page.evaluate(`document.getElementById("executions-user").validity.patternMismatch`)).toBe(true)
    // And the page says it was not applied, beside the field (ui/PatternInput.tsx).
    await page.getByRole("button", { name: "Apply filters" }).click()
    await expect.poll(() => page.getByLabel("User id").getAttribute("aria-invalid")).toBe("true")
    expect(await page.locator("#executions-user-error").textContent()).toContain("Not applied")
    expect(new URL(page.url()).search).toBe("?userId=user_trimmed")
    await page.close()
  })
})

describe("the executions list's refreshing", () => {
  it("says it refreshes every 2 seconds while a row is pending or running, as trigger events and deliveries do, and stops saying so", async () => {
    const target = await sleeping("user_refresh_note")
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?userId=user_refresh_note")
    const note = list(page).getByText(/^Refreshing every 2 seconds/)
    await note.waitFor()
    expect(await note.textContent()).toBe("Refreshing every 2 seconds while executions are pending or running.")
    expect(await note.getAttribute("role")).toBe("status")
    expect(await note.getAttribute("class")).toBe("muted")
    await api.executions.cancel(target.executionId)
    await expect.poll(() => note.count(), { timeout: 10_000 }).toBe(0)
    await list(page).locator(`tr[data-execution-id="${target.executionId}"] .badge-cancelled`).waitFor()
    await page.close()
  })
})

describe("cancelling an execution", () => {
  it("cancels a running execution from its row: the row then shows cancelled, and the focus stays in it", async () => {
    const target = await sleeping("user_cancel_row")
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?tool=demo.sleep&userId=user_cancel_row")
    const row = page.locator(`tr[data-execution-id="${target.executionId}"]`)
    await row.getByRole("button", { name: `Cancel ${target.executionId}` }).click()
    await row.getByRole("button", { name: `Confirm cancelling ${target.executionId}` }).click()
    await row.locator(".badge-cancelled").waitFor({ timeout: 10_000 })
    expect(await row.getByRole("button").count()).toBe(0)
    await list(page).getByRole("status").getByText(`${target.executionId} cancelled.`).waitFor()
    expect(await page.evaluate("document.activeElement?.textContent")).toBe(target.executionId)
    expect((await api.executions.get(target.executionId)).status).toBe("cancelled")
    // Finished ones carry no Cancel button.
    await page.goto(url("/dashboard/executions"))
    await page.locator("tbody tr").first().waitFor()
    const buttons = await list(page).locator("tbody tr").evaluateAll((trs) =>
      trs.filter((tr) => tr.querySelector("button") !== null).map((tr) => tr.children[2]?.textContent ?? "")
    )
    expect(buttons.every((status) => status === "pending" || status === "running")).toBe(true)
    await page.close()
  })

  it("cancels from the record view, which then shows cancelled; a key pinned to the user may cancel too", async () => {
    const target = await sleeping("user_1")
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/executions/${target.executionId}`, PINNED_KEY)
    await page.getByRole("heading", { level: 1, name: "Execution" }).waitFor()
    await page.getByRole("button", { name: "Cancel execution" }).click()
    await page.getByRole("button", { name: "Confirm cancel" }).click()
    const record = page.getByRole("region", { name: target.executionId })
    await record.locator(".badge-cancelled").waitFor({ timeout: 10_000 })
    await record.getByText("execution_cancelled").waitFor()
    await record.getByText("Dispatch may have begun").waitFor()
    expect(await page.getByRole("button", { name: "Cancel execution" }).count()).toBe(0)
    expect(await page.evaluate("document.activeElement?.id")).toBe("execution-title")
    expect(await seriousViolations(page)).toEqual([])
    await page.close()
  })

  it("asks first, on a record and in a row: Escape and the keep button go back, and nothing is sent until confirmed", async () => {
    const target = await sleeping("user_cancel_ask")
    const page = await h.browser.context.newPage()
    const watched = watch(page)
    const cancels = () => watched.requests.filter((request) => request.endsWith("/cancel"))
    const focused = () => page.evaluate("document.activeElement?.textContent")
    await signIn(page, `/dashboard/executions/${target.executionId}`)
    const record = page.getByRole("region", { name: target.executionId })
    await record.getByRole("button", { name: "Cancel execution" }).click()
    const confirm = record.getByRole("button", { name: "Confirm cancel" })
    await expect.poll(focused).toBe("Confirm cancel")
    expect(await confirm.getAttribute("aria-describedby")).not.toBeNull()
    await record.getByText("The execution stops for good").waitFor()
    await page.keyboard.press("Escape")
    await expect.poll(focused).toBe("Cancel execution")
    expect(await confirm.count()).toBe(0)
    await record.getByRole("button", { name: "Cancel execution" }).click()
    await record.getByRole("button", { name: "Keep the execution" }).click()
    await expect.poll(focused).toBe("Cancel execution")
    expect(cancels()).toEqual([])
    expect(await seriousViolations(page)).toEqual([])

    // The same in its row of the list.
    await page.goto(url("/dashboard/executions?tool=demo.sleep&userId=user_cancel_ask"))
    const row = page.locator(`tr[data-execution-id="${target.executionId}"]`)
    await row.getByRole("button", { name: `Cancel ${target.executionId}` }).click()
    await expect.poll(focused).toBe("Confirm cancel")
    await page.keyboard.press("Escape")
    await row.getByRole("button", { name: `Cancel ${target.executionId}` }).click()
    await row.getByRole("button", { name: "Keep the execution" }).click()
    await expect.poll(() => page.evaluate("document.activeElement?.getAttribute('aria-label')")).toBe(`Cancel ${target.executionId}`)
    expect(cancels()).toEqual([])
    expect(["pending", "running"]).toContain((await api.executions.get(target.executionId)).status)
    await api.executions.cancel(target.executionId)
    await page.close()
  })

  it("shows the service's code and message when the cancel is refused (the execution finished meanwhile)", async () => {
    const page = await h.browser.context.newPage()
    // Signed in before the execution starts: a cold sign-in could outlast it, leaving no Cancel to press.
    await signIn(page)
    // Long enough to open the record and click twice on a loaded machine (1.5 s ran out under CI once).
    const target = await api.executions.execute({ tool: "demo.sleep", input: { ms: 5_000 }, userId: "user_cancel_late", mode: "async" })
    // The cancel reaches the service only once the execution has finished: it answers 409.
    await page.route(`**/v1/executions/${target.executionId}/cancel`, async (route) => {
      await api.executions.wait(target.executionId, { timeoutMs: 10_000 })
      await route.continue()
    })
    await page.goto(url(`/dashboard/executions/${target.executionId}`))
    await page.getByRole("button", { name: "Cancel execution" }).click()
    await page.getByRole("button", { name: "Confirm cancel" }).click()
    // While the cancel is in flight the button says so, keeps the focus and does not ask again.
    const busy = page.getByRole("button", { name: "Cancelling…" })
    expect(await busy.getAttribute("aria-disabled")).toBe("true")
    await expect.poll(() => page.evaluate("document.activeElement?.textContent")).toBe("Cancelling…")
    await busy.click({ force: true })
    expect(await page.getByRole("button", { name: "Confirm cancel" }).count()).toBe(0)
    const alert = page.getByRole("region", { name: target.executionId }).getByRole("alert")
    await expect.poll(() => alert.locator(".error-code").textContent(), { timeout: 10_000 }).toBe("invalid_input")
    expect(await alert.textContent()).toContain("HTTP 409")
    expect((await alert.locator(".error-message").textContent())?.length).toBeGreaterThan(0)
    await page.close()
  })
  it("moves the focus to the record's heading, and says so, when the execution finishes while the cancel is being confirmed", async () => {
    const target = await sleeping("user_cancel_finished")
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/executions/${target.executionId}`)
    const record = page.getByRole("region", { name: target.executionId })
    await record.getByRole("button", { name: "Cancel execution" }).click()
    await expect.poll(() => focusedIn(page)).toBe("BUTTON:Confirm cancel")
    // It finishes elsewhere (another tab, another client): the record's polling sees it.
    await api.executions.cancel(target.executionId)
    await record.locator(".badge-cancelled").waitFor({ timeout: 10_000 })
    expect(await record.getByRole("button", { name: "Confirm cancel" }).count()).toBe(0)
    await expect.poll(() => focusedIn(page)).toBe("H2:#execution-title")
    await expect.poll(() => record.getByRole("status").textContent()).toBe("The execution finished (cancelled); there is nothing left to cancel.")
    await page.close()
  })

  it("moves the focus to the row's link, and says so, when the execution finishes while the cancel is being confirmed in its row", async () => {
    const target = await sleeping("user_cancel_row_finished")
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/executions?userId=user_cancel_row_finished")
    const row = page.locator(`tr[data-execution-id="${target.executionId}"]`)
    await row.getByRole("button", { name: `Cancel ${target.executionId}` }).click()
    await expect.poll(() => focusedIn(page)).toBe("BUTTON:Confirm cancel")
    await api.executions.cancel(target.executionId)
    await row.locator(".badge-cancelled").waitFor({ timeout: 10_000 })
    await expect.poll(() => focusedIn(page)).toBe(`A:${target.executionId}`)
    await expect.poll(() => list(page).getByRole("status").first().textContent())
      .toBe(`${target.executionId} finished (cancelled); there is nothing left to cancel.`)

    // Filtered to running ones, the finished row leaves the list with the focus: it goes to the list's heading.
    const other = await sleeping("user_cancel_row_finished")
    await page.goto(url("/dashboard/executions?status=running&userId=user_cancel_row_finished"))
    const running = page.locator(`tr[data-execution-id="${other.executionId}"]`)
    await running.getByRole("button", { name: `Cancel ${other.executionId}` }).click()
    await expect.poll(() => focusedIn(page)).toBe("BUTTON:Confirm cancel")
    await api.executions.cancel(other.executionId)
    await expect.poll(() => running.count(), { timeout: 10_000 }).toBe(0)
    await expect.poll(() => focusedIn(page)).toBe("H2:#executions-title")
    await page.close()
  })
})
