/**
 * A secret the service shows once (a signing secret on an endpoint's creation and rotation, an
 * ingest URL on a subscription's creation and rotation) is not lost without a warning, in
 * headless Chromium against the real service. While it is on the page and not put away: a link
 * of the dashboard, its Back button and signing out ask first in a dialog of the page ("Stay" has
 * the focus; staying keeps the secret, with the focus on it; leaving goes), and a reload raises
 * the browser's own prompt (`beforeunload`); creating or rotating what would show another secret
 * in its place asks too ("Stay" keeps it and does nothing). Once it is put away, nothing asks.
 */
import type { Page } from "playwright-core"
import { describe, expect, it } from "vitest"
import { createPollingSubscription, envelope, focused, screenshot, seriousViolations, settled, signIn as signInAt, submitPushSubscription, subscriptionIdOf } from "./Browser.ts"
import { dashboardHarness } from "./Harness.ts"

const h = await dashboardHarness()
const { api, url } = h

const signIn = (page: Page, path: string) => signInAt(page, url(path))


const path = (page: Page) => new URL(page.url()).pathname

/** The page's own question before leaving a secret behind. */
const leaving = (page: Page) => page.getByRole("alertdialog", { name: "Leave this page?" })

/** Creates an endpoint on the webhooks page (a click: the page has had a user gesture); its secret. */
const createEndpoint = async (page: Page, name: string): Promise<string> => {
  await page.getByLabel("HTTPS URL").fill(`https://example.com/${name}`)
  await page.getByRole("button", { name: "Create endpoint" }).click()
  const secret = await page.getByLabel("Signing secret", { exact: true }).inputValue()
  expect(secret).toMatch(/^whsec_/)
  return secret
}

describe("a secret shown once, not yet put away", () => {
  it("asks before a link of the dashboard leaves it: Stay keeps it with the focus on it, Escape too, Leave goes", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    const secret = await createEndpoint(page, "leave-link")
    const field = page.getByLabel("Signing secret", { exact: true })

    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Files" }).click()
    const dialog = leaving(page)
    await dialog.waitFor()
    const says = (await dialog.textContent()) ?? ""
    expect(says).toContain("signing secret")
    expect(says).toContain("will not be shown again")
    // The safe choice has the focus; nothing has moved yet.
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay on this page")
    expect(path(page)).toBe("/dashboard/webhooks")
    expect(await seriousViolations(page)).toEqual([])
    await screenshot(page, "leave-guard-asking")

    await dialog.getByRole("button", { name: "Stay on this page" }).click()
    await expect.poll(() => leaving(page).count()).toBe(0)
    expect(path(page)).toBe("/dashboard/webhooks")
    expect(await field.inputValue()).toBe(secret)
    // Back on what the user stayed for: the secret's panel.
    await expect.poll(() => focused(page)).toBe("H3:#secret-signing-secret-title")

    // Escape is Stay too.
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Files" }).click()
    await leaving(page).waitFor()
    await page.keyboard.press("Escape")
    await expect.poll(() => leaving(page).count()).toBe(0)
    expect(path(page)).toBe("/dashboard/webhooks")
    expect(await field.inputValue()).toBe(secret)

    // The panel's own link away asks as well; Leave goes, and the secret with it.
    await page.locator("section.secret").getByRole("link", { name: "Open the endpoint" }).click()
    await leaving(page).getByRole("button", { name: /^Leave/ }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoint" }).waitFor()
    expect(path(page)).toMatch(/^\/dashboard\/webhooks\/whe_/)
    expect(await page.content()).not.toContain(secret)
    expect(await leaving(page).count()).toBe(0)
    await page.close()
  })

  it("asks on the browser's Back button too: Stay keeps the page and its history, Leave goes back", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/files")
    await page.getByRole("link", { name: "Webhooks" }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    const entries = await page.evaluate<number>("history.length")
    const secret = await createEndpoint(page, "leave-back")

    await page.evaluate("history.back()")
    await leaving(page).waitFor()
    await expect.poll(() => path(page)).toBe("/dashboard/webhooks")
    await leaving(page).getByRole("button", { name: "Stay on this page" }).click()
    await expect.poll(() => leaving(page).count()).toBe(0)
    expect(path(page)).toBe("/dashboard/webhooks")
    expect(await page.getByLabel("Signing secret", { exact: true }).inputValue()).toBe(secret)
    expect(await page.evaluate<number>("history.length")).toBe(entries)

    await page.evaluate("history.back()")
    await leaving(page).getByRole("button", { name: /^Leave/ }).click()
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    expect(path(page)).toBe("/dashboard/files")
    // Forward again: the list, without the secret, and nothing asks any more.
    await page.evaluate("history.forward()")
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    expect(await page.content()).not.toContain(secret)
    await page.evaluate("history.back()")
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    expect(await leaving(page).count()).toBe(0)
    await page.close()
  })

  it("asks before signing out", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    const secret = await createEndpoint(page, "leave-sign-out")
    await page.getByRole("button", { name: "Sign out" }).click()
    await leaving(page).getByRole("button", { name: "Stay on this page" }).click()
    expect(await page.getByLabel("Signing secret", { exact: true }).inputValue()).toBe(secret)
    await page.getByRole("button", { name: "Sign out" }).click()
    await leaving(page).getByRole("button", { name: /^Leave/ }).click()
    await page.getByLabel("API key").waitFor()
    expect(await page.content()).not.toContain(secret)
    await page.close()
  })

  it("raises the browser's prompt on a reload; once copied and put away, neither a reload nor a link asks", async () => {
    const page = await h.browser.context.newPage()
    const dialogs: Array<string> = []
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.type())
      // Cancel the reload: the page stays as it was.
      void dialog.dismiss()
    })
    await signIn(page, "/dashboard/webhooks")
    // Chromium raises the prompt only after a user gesture on the page: the create's click is one.
    const secret = await createEndpoint(page, "leave-reload")
    await page.evaluate("location.reload()")
    await expect.poll(() => dialogs).toEqual(["beforeunload"])
    expect(await page.getByLabel("Signing secret", { exact: true }).inputValue()).toBe(secret)

    await page.getByRole("button", { name: "Copy signing secret" }).click()
    await page.getByText("Copied to the clipboard.").waitFor()
    await page.getByRole("button", { name: /^I have stored it/ }).click()
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Files" }).click()
    await page.getByRole("heading", { level: 1, name: "Staged files" }).waitFor()
    expect(await leaving(page).count()).toBe(0)
    await page.goBack()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    await page.reload()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    expect(dialogs).toEqual(["beforeunload"])
    await page.close()
  })

  it("asks before a key refused mid-session signs out: Stay keeps the secret, the next refusal asks again, and signing out goes", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    const secret = await createEndpoint(page, "refused-key")
    // The list reloads after the creation: the key is refused only once it has.
    await page.getByRole("cell", { name: "https://example.com/refused-key" }).waitFor()
    await settled(page)
    await page.route("**/v1/**", envelope(401, "auth_expired", "The API key is invalid or revoked.", false))
    await page.getByRole("button", { name: "Refresh" }).click()
    const refused = page.getByRole("alertdialog", { name: "The service refused the key" })
    await refused.waitFor()
    expect(await refused.textContent()).toContain("signing out loses it")
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay and keep the signing secret")
    await refused.getByRole("button", { name: "Stay and keep the signing secret" }).click()
    await expect.poll(() => refused.count()).toBe(0)
    expect(await page.getByLabel("Signing secret", { exact: true }).inputValue()).toBe(secret)
    expect(await page.getByLabel("API key").count()).toBe(0)

    await page.getByRole("button", { name: "Refresh" }).click()
    await refused.getByRole("button", { name: "Sign out and lose the signing secret" }).click()
    await page.getByLabel("API key").waitFor()
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/auth_expired/)
    await page.close()
  })

  it("asks for a rotated signing secret, and not when deleting its endpoint leaves the page", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/leave-rotate", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/webhooks/${endpoint.endpointId}`)
    await page.getByRole("button", { name: "Rotate secret" }).click()
    await page.getByRole("button", { name: "Confirm rotate" }).click()
    const rotated = await page.getByLabel("New signing secret", { exact: true }).inputValue()
    await page.getByRole("link", { name: "← All endpoints" }).click()
    const dialog = leaving(page)
    expect(await dialog.textContent()).toContain("new signing secret")
    await dialog.getByRole("button", { name: "Stay on this page" }).click()
    await expect.poll(() => focused(page)).toBe("H3:#secret-new-signing-secret-title")
    expect(await page.getByLabel("New signing secret", { exact: true }).inputValue()).toBe(rotated)
    // A deleted endpoint's secret signs nothing: the delete leaves without asking.
    await page.getByRole("button", { name: "Delete endpoint" }).click()
    await page.getByRole("button", { name: "Confirm delete" }).click()
    await page.getByRole("heading", { level: 1, name: "Webhook endpoints" }).waitFor()
    await page.getByText(`Endpoint ${endpoint.endpointId} deleted.`).waitFor()
    expect(await leaving(page).count()).toBe(0)
    await page.close()
  })

  it("asks for an ingest URL, on a subscription's creation and on its rotation", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/leave-ingest", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await submitPushSubscription(page, { userId: "user_leave", endpointId: endpoint.endpointId })
    const ingestUrl = await page.getByLabel("Ingest URL", { exact: true }).inputValue()
    const id = subscriptionIdOf(ingestUrl)
    await page.getByRole("navigation", { name: "Views" }).getByRole("link", { name: "Executions" }).click()
    const dialog = leaving(page)
    expect(await dialog.textContent()).toContain("ingest URL")
    expect(await seriousViolations(page)).toEqual([])
    await dialog.getByRole("button", { name: "Stay on this page" }).click()
    await expect.poll(() => leaving(page).count()).toBe(0)
    expect(path(page)).toBe("/dashboard/subscriptions")
    await page.getByRole("button", { name: /^I have stored it/ }).click()

    const row = page.locator(`tr[data-subscription-id="${id}"]`)
    await row.getByRole("button", { name: `Rotate ingest URL of ${id}` }).click()
    await row.getByRole("button", { name: `Confirm rotating the ingest URL of ${id}` }).click()
    const rotated = await page.getByLabel("Ingest URL", { exact: true }).inputValue()
    expect(rotated).not.toBe(ingestUrl)
    await row.getByRole("link", { name: "Events" }).click()
    await leaving(page).getByRole("button", { name: /^Leave/ }).click()
    await page.getByRole("heading", { level: 1, name: "Trigger event history" }).waitFor()
    expect(await page.content()).not.toContain(rotated)
    await page.close()
  })
})

/** The page's own question before a new secret replaces the one shown. */
const replacing = (page: Page, what: string) => page.getByRole("alertdialog", { name: `Replace the ${what}?` })

describe("a secret shown once, not yet put away, is not replaced without asking", () => {
  it("asks before creating a second endpoint: Stay keeps the first secret and creates nothing, Replace creates and shows the new one", async () => {
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/webhooks")
    const first = await createEndpoint(page, "replace-first")
    const field = page.getByLabel("Signing secret", { exact: true })
    const urls = async () => (await api.webhooks.list({ limit: 100 })).webhooks.map((endpoint) => endpoint.url)

    await page.getByLabel("HTTPS URL").fill("https://example.com/replace-second")
    await page.getByRole("button", { name: "Create endpoint" }).click()
    const dialog = replacing(page, "signing secret")
    await dialog.waitFor()
    expect(await dialog.textContent()).toContain("will not be shown again")
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay and keep the signing secret")
    expect(await seriousViolations(page)).toEqual([])
    await dialog.getByRole("button", { name: "Stay and keep the signing secret" }).click()
    await expect.poll(() => replacing(page, "signing secret").count()).toBe(0)
    expect(await field.inputValue()).toBe(first)
    await expect.poll(() => focused(page)).toBe("H3:#secret-signing-secret-title")
    expect(await urls()).not.toContain("https://example.com/replace-second")

    // Escape stays too.
    await page.getByRole("button", { name: "Create endpoint" }).click()
    await replacing(page, "signing secret").waitFor()
    await page.keyboard.press("Escape")
    await expect.poll(() => replacing(page, "signing secret").count()).toBe(0)
    expect(await field.inputValue()).toBe(first)
    expect(await urls()).not.toContain("https://example.com/replace-second")

    await page.getByRole("button", { name: "Create endpoint" }).click()
    await replacing(page, "signing secret").getByRole("button", { name: "Replace and lose the signing secret" }).click()
    await expect.poll(() => field.inputValue()).not.toBe(first)
    expect(await field.inputValue()).toMatch(/^whsec_/)
    expect(await urls()).toContain("https://example.com/replace-second")
    expect(await page.content()).not.toContain(first)

    // Put away: a further creation asks nothing.
    await page.getByRole("button", { name: /^I have stored it/ }).click()
    await createEndpoint(page, "replace-third")
    expect(await replacing(page, "signing secret").count()).toBe(0)
    expect(await urls()).toContain("https://example.com/replace-third")
    await page.close()
  })

  it("asks before rotating again while a rotated secret is shown", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/replace-rotate", events: ["execution.completed"] })
    const page = await h.browser.context.newPage()
    await signIn(page, `/dashboard/webhooks/${endpoint.endpointId}`)
    const rotate = async () => {
      await page.getByRole("button", { name: "Rotate secret" }).click()
      await page.getByRole("button", { name: "Confirm rotate" }).click()
    }
    const field = page.getByLabel("New signing secret", { exact: true })
    await rotate()
    const first = await field.inputValue()
    const prefix = async () => (await api.webhooks.get(endpoint.endpointId)).secretPrefix
    const firstPrefix = await prefix()
    expect(first.startsWith(firstPrefix)).toBe(true)

    await rotate()
    const dialog = replacing(page, "new signing secret")
    await dialog.waitFor()
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay and keep the new signing secret")
    await dialog.getByRole("button", { name: /^Stay/ }).click()
    await expect.poll(() => replacing(page, "new signing secret").count()).toBe(0)
    expect(await field.inputValue()).toBe(first)
    // Not rotated: the secret shown still signs.
    expect(await prefix()).toBe(firstPrefix)

    await rotate()
    await replacing(page, "new signing secret").getByRole("button", { name: /^Replace/ }).click()
    await expect.poll(() => field.inputValue()).not.toBe(first)
    const second = await field.inputValue()
    expect(second.startsWith(await prefix())).toBe(true)

    await page.getByRole("button", { name: /^I have stored it/ }).click()
    await rotate()
    await field.waitFor()
    expect(await replacing(page, "new signing secret").count()).toBe(0)
    expect(await field.inputValue()).not.toBe(second)
    await page.close()
  })

  it("asks before a second subscription or a rotation replaces an ingest URL shown", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/replace-ingest", events: ["trigger.*"] })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    const create = (userId: string) => submitPushSubscription(page, { userId, endpointId: endpoint.endpointId })
    const users = async () => (await api.subscriptions.list({ limit: 100 })).subscriptions.map((subscription) => subscription.userId)
    const field = page.getByLabel("Ingest URL", { exact: true })
    await create("user_replace_1")
    const first = await field.inputValue()
    const firstId = subscriptionIdOf(first)

    await create("user_replace_2")
    const dialog = replacing(page, "ingest URL")
    await dialog.waitFor()
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay and keep the ingest URL")
    await dialog.getByRole("button", { name: /^Stay/ }).click()
    await expect.poll(() => replacing(page, "ingest URL").count()).toBe(0)
    expect(await field.inputValue()).toBe(first)
    expect(await users()).not.toContain("user_replace_2")

    await page.getByRole("button", { name: "Create subscription" }).click()
    await replacing(page, "ingest URL").getByRole("button", { name: /^Replace/ }).click()
    await expect.poll(() => field.inputValue()).not.toBe(first)
    const second = await field.inputValue()
    expect(await users()).toContain("user_replace_2")

    // Rotating another subscription's URL asks too; Stay leaves the first's URL working.
    const row = page.locator(`tr[data-subscription-id="${firstId}"]`)
    await row.getByRole("button", { name: `Rotate ingest URL of ${firstId}` }).click()
    await row.getByRole("button", { name: `Confirm rotating the ingest URL of ${firstId}` }).click()
    await replacing(page, "ingest URL").getByRole("button", { name: /^Stay/ }).click()
    await expect.poll(() => replacing(page, "ingest URL").count()).toBe(0)
    expect(await field.inputValue()).toBe(second)
    await row.getByRole("button", { name: `Rotate ingest URL of ${firstId}` }).click()
    await row.getByRole("button", { name: `Confirm rotating the ingest URL of ${firstId}` }).click()
    await replacing(page, "ingest URL").getByRole("button", { name: /^Replace/ }).click()
    await expect.poll(() => field.inputValue()).not.toBe(second)
    expect(await field.inputValue()).toContain(firstId)

    await page.getByRole("button", { name: /^I have stored it/ }).click()
    await create("user_replace_3")
    await field.waitFor()
    expect(await replacing(page, "ingest URL").count()).toBe(0)
    await page.close()
  })
  it("asks in its own words before a polling subscription, which shows no URL, takes the ingest URL shown off the page", async () => {
    const endpoint = await api.webhooks.create({ url: "https://example.com/remove-ingest", events: ["trigger.*"] })
    const connection = await api.connections.create({
      userId: "user_remove_polling",
      toolkit: "github",
      authClass: "bearer",
      credentials: { token: "gh-remove" },
      scopes: ["issues:read"]
    })
    const page = await h.browser.context.newPage()
    await signIn(page, "/dashboard/subscriptions")
    await submitPushSubscription(page, { userId: "user_remove_push", endpointId: endpoint.endpointId })
    const field = page.getByLabel("Ingest URL", { exact: true })
    const shown = await field.inputValue()
    const users = async () => (await api.subscriptions.list({ limit: 100 })).subscriptions.map((subscription) => subscription.userId)

    const polling = createPollingSubscription(page, { userId: "user_remove_polling", connectionId: connection.connectionId, endpointId: endpoint.endpointId })
    const removing = page.getByRole("alertdialog", { name: "Put away the ingest URL?" })
    await removing.waitFor()
    // It says what happens: nothing replaces the URL, it is taken off the page.
    expect(await removing.textContent()).toContain("going on takes it off the page and loses it")
    expect(await replacing(page, "ingest URL").count()).toBe(0)
    await expect.poll(() => focused(page)).toBe("BUTTON:Stay and keep the ingest URL")
    await removing.getByRole("button", { name: "Stay and keep the ingest URL" }).click()
    await expect.poll(() => removing.count()).toBe(0)
    expect(await field.inputValue()).toBe(shown)
    expect(await users()).not.toContain("user_remove_polling")

    await page.getByRole("button", { name: "Create subscription" }).click()
    await removing.getByRole("button", { name: "Go on and lose the ingest URL" }).click()
    await polling
    await expect.poll(() => users()).toContain("user_remove_polling")
    expect(await field.count()).toBe(0)
    await page.close()
  })
})
